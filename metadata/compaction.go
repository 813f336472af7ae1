package metadata

// CompactionStore is the part of the Store the compactor works through:
// object listing by level, atomic index swaps, retention, job leases.
type CompactionStore interface{}
