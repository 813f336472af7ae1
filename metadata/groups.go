package metadata

// GroupStore is the part of the Store that holds consumer groups: committed
// offsets and the state a group coordinator needs to take over.
type GroupStore interface{}
