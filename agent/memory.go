package agent

// MemoryBudget is one of the byte budgets an agent's memory is held to:
// what it bounds, the flag that sets it and its size. The agent's own
// budgets are Config.MemoryBudgets; a process running more (floe dev's
// compactor) adds its own before it sets the Go runtime's memory limit
// from their sum (cmd/floe/memlimit.go).
type MemoryBudget struct {
	// Name is the budget's name in logs and the docs' Memory section.
	Name string
	// Flag is the command-line flag that sets it.
	Flag  string
	Bytes int64
}

// MemoryBudgets returns the budgets that bound what the agent holds, then
// ProcessMemoryBudgets. The agent's own are each charged as the bytes
// arrive or are made, released when the last reference goes (agent/internal/budget):
//
//   - request: request frames read and still referenced, which include
//     every produced batch until its object is stored (batches alias their
//     frames), over all connections;
//   - idle buffers: recycled frame and Fetch answer buffers kept for reuse
//     (internal/bufpool), at most half of --buffer-bytes;
//   - fetch: the record bytes of Fetch answers built and not yet written;
//   - read cache: the byte ranges of objects kept for fetches;
//   - read-ahead: the ranges read ahead of consumers catching up, while
//     their GETs run (once cached they are the read cache's).
//
// Two exceptions let a single request or answer pass a full budget, as
// Kafka's do: a request larger than the whole request budget is read when
// nothing else is held (up to --max-request-size), and a Fetch answer's
// first batch comes whole even over --fetch-max-bytes (KIP-74).
func (c *Config) MemoryBudgets() []MemoryBudget {
	return append([]MemoryBudget{
		{Name: "request", Flag: "buffer-bytes", Bytes: c.BufferBytes},
		{Name: "idle buffers", Flag: "buffer-bytes", Bytes: c.poolBytes()},
		{Name: "fetch", Flag: "fetch-buffer-bytes", Bytes: c.FetchBufferBytes},
		{Name: "read cache", Flag: "cache-bytes", Bytes: c.CacheBytes},
		{Name: "read-ahead", Flag: "read-ahead-bytes", Bytes: c.ReadAheadBytes},
	}, c.ProcessMemoryBudgets...)
}

// poolBytes bounds the idle buffers of the agent's buffer pool.
func (c *Config) poolBytes() int64 { return c.BufferBytes / 2 }

// SumBudgets is the bytes the budgets together allow.
func SumBudgets(bs []MemoryBudget) int64 {
	var n int64
	for _, b := range bs {
		n += max(b.Bytes, 0)
	}
	return n
}
