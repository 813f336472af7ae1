// Package bench is floe's load generator and the baselines it is compared
// with: `floe bench produce|consume|e2e` drives any Kafka-compatible broker
// with franz-go clients at a fixed target rate (or as fast as it goes),
// records produce-acknowledgement and end-to-end latencies in log-linear
// histograms free of coordinated omission, reads the agent's object-store
// and metadata counters from its /metrics, and writes JSON and a
// self-contained HTML latency chart.
//
// Baselines run under the same load in the same invocation: franz-go's
// in-memory kfake broker, and raw PUTs straight to a bucket at the object
// size and concurrency the agent used.
//
// bench is a client: it never imports agent, and it measures only through
// the Kafka protocol, the bucket interface and the metrics endpoint, so the
// figures are those a user would see.
package bench
