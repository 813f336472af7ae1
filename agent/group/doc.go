// Package group holds floe's two consumer group state machines, with the
// error codes a Java broker returns:
//
//   - Group, the classic protocol (JoinGroup, SyncGroup, Heartbeat,
//     LeaveGroup): generations, member ids and the MEMBER_ID_REQUIRED round
//     trip, static membership, session and rebalance timeouts, protocol
//     selection and leader election (join.go, group.go).
//   - ConsumerGroup, the KIP-848 protocol (ConsumerGroupHeartbeat): member
//     and group epochs, subscriptions by topic list or regex
//     (CompileTopicRegex), a target assignment computed on the server by
//     the uniform or range assignor whenever the group epoch moves, and
//     reconciliation that revokes a partition before it is handed on;
//     static members found by instance id, one that leaves with epoch -2
//     keeping its place until it restarts or its session expires
//     (consumer.go, assignors.go).
//
// Both describe themselves for DescribeGroups / ConsumerGroupDescribe,
// check OffsetCommits against their generation or member epoch, and have a
// durable form: Snapshot, and Restore / RestoreConsumerGroup.
//
// The package is pure: no I/O, no goroutines, no clock. Every call takes
// the current time; Tick applies timeouts. Classic requests that Kafka
// parks (JoinGroup until the rebalance completes, SyncGroup until the
// leader assigns) take a reply callback that is called exactly once,
// possibly during a later call. The caller serializes all calls on one
// group (one mutex per group in the agent's coordinator), persists
// Snapshot whenever TakeChanged reports a change, and holds the lease that
// makes it the group's one coordinator: leases and storage live outside.
package group
