package metadata

// IsInternalTopic reports whether name is one of Kafka's internal topics
// (__consumer_offsets, __transaction_state), decided by name as Kafka's
// Topic.isInternal does. Agents refuse appends to them and the Iceberg
// converter never turns them into tables.
func IsInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}
