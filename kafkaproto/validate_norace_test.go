//go:build !race

package kafkaproto

const raceEnabled = false
