//go:build !race

package iceberg

const raceEnabled = false
