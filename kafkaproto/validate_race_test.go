//go:build race

package kafkaproto

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts through pools are not meaningful.
const raceEnabled = true
