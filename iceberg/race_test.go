//go:build race

package iceberg

// raceEnabled: under the race detector the memory bounds are not the
// plain build's (sync.Pool drops items at random, every access is
// instrumented) and 56 MiB a format takes minutes; make test checks them
// in its plain run.
const raceEnabled = true
