// Package agent is floe's Kafka-facing server. An Agent accepts Kafka
// connections, answers each API in its own file (named by API key), batches
// the records produced to all partitions into one pending object that is
// flushed with one PUT and one metadata commit, serves fetches from stored
// objects through the read cache, and exposes /metrics, /healthz and /readyz
// over HTTP.
//
// An agent owns no partition and no disk: every durable fact lives in the
// metadata store or the bucket, so any agent can serve any request and a lost
// agent loses nothing that was acknowledged. The agent must never answer a
// produce before both the object PUT and its metadata commit have succeeded.
//
// # Rooms
//
// Every non-test file of the package, by concern (doc_test.go checks that
// each is named here and that every file named here exists). The NN_*.go
// files answer one Kafka API each, named by its key.
//
// Server: the Agent, its lifecycle and what every request passes through.
//   - doc.go: this map.
//   - agent.go: New, Start, Close, the heartbeat and the live agents (viewMu).
//   - config.go: Config and its defaults.
//   - listeners.go: Kafka listeners (name, security protocol, addresses).
//   - conn.go: one connection: one reader, one writer, answers in request
//     order; the version check against apis before handle.
//   - peergone_linux.go, peergone_other.go: whether a peer hung up while its
//     frame waits for budget.
//   - apis.go: the apis table and the one dispatch switch (handle).
//   - apis_export.go: APIVersions, for the docs generator.
//   - internal/control/control.go: package agent/internal/control, tests'
//     control functions (Agent.ControlKey, as kfake's): answer, fail,
//     delay or watch the requests of one API.
//   - 18_api_versions.go: ApiVersions, answered from apis, with the
//     features of internal/features.
//   - internal/features/features.go: package agent/internal/features,
//     the finalized features floe serves (metadata.version, group.version,
//     share.version) and UpdateFeatures' answers against them.
//   - 60_describe_cluster.go: DescribeCluster.
//   - departed.go: departed agents' node ids kept in Metadata for a while.
//   - drain.go: leaving the fleet (Close's drain).
//   - http.go: /metrics, /healthz, /readyz and the mounted handlers.
//   - registry.go: the schema registry's listener and its mount on the HTTP
//     port.
//   - metrics.go: the agent's Prometheus metrics.
//
// Produce: batches into one pending object, one PUT and one commit per flush.
//   - 00_produce.go: Produce: validation, schema checks, the batcher.
//   - batcher.go: the pending object, flushes and their ordered commits.
//
// Fetch: reads from stored objects through the read cache (a storage.Cache
// the Agent makes in New).
//   - 01_fetch.go: Fetch, long polls, the answer as parts for vectored writes.
//   - 02_list_offsets.go: ListOffsets.
//   - 23_offset_for_leader_epoch.go: OffsetForLeaderEpoch.
//   - heads.go: the index entries of this agent's own commits, for consumers
//     at the head of the log (write-through).
//   - internal/readahead/readahead.go: package agent/internal/readahead,
//     read-ahead for consumers catching up, over one index look-up and
//     the read cache.
//   - peer_cache.go: the agent's side of the zone's shared read cache: the
//     peer secret, the HTTP address peers reach.
//   - internal/peercache/peercache.go, internal/peercache/signer.go: package
//     agent/internal/peercache, the shared read cache over the agents' HTTP
//     ports and how agents prove to each other that they belong to the
//     cluster before it hands out bytes.
//
// Topics and configs: topics, partitions, cluster metadata and configs.
//   - topics.go: the topic cache and auto-creation; the topic-config table
//     is topicconfig.Defs, checked by topicconfig.Check and CheckSet; the
//     defaults a topic without its own value gets (flags, then the
//     cluster's dynamic broker configs, re-read every heartbeat) are
//     topicconfig.Live.
//   - internal_topics.go: Kafka's internal topics (__consumer_offsets).
//   - 03_metadata.go: Metadata: brokers, leaders by hash, zones.
//   - 75_describe_topic_partitions.go: DescribeTopicPartitions.
//   - 19_create_topics.go, 20_delete_topics.go, 37_create_partitions.go,
//     21_delete_records.go: topic lifecycle.
//   - 32_describe_configs.go, 33_alter_configs.go,
//     44_incremental_alter_configs.go: configs of topics, brokers and groups.
//   - 35_describe_log_dirs.go, 43_elect_leaders.go,
//     45_alter_partition_reassignments.go,
//     46_list_partition_reassignments.go, 57_update_features.go: the admin
//     APIs floe answers with what object storage makes of them.
//
// Coordination: groups, transactions and who coordinates them.
//   - internal/lease/lease.go: package agent/internal/lease, the leased
//     owner both coordinators share: an entry per key, served only under
//     the key's coordinator lease.
//   - internal/ring/ring.go: package agent/internal/ring, placement of keys
//     on live agents (rendezvous hashing), for coordinators and the peer
//     cache.
//   - 10_find_coordinator.go: FindCoordinator.
//   - Classic groups: coordinator.go, coordinator_entry.go,
//     group_configs.go, 08_offset_commit.go, 09_offset_fetch.go,
//     11_join_group.go, 12_heartbeat.go, 13_leave_group.go,
//     14_sync_group.go, 15_describe_groups.go, 16_list_groups.go,
//     42_delete_groups.go, 47_offset_delete.go. The state machines are in
//     package agent/group.
//   - internal/lag/lag.go: package agent/internal/lag, the consumer lag
//     of the groups placed here, as Prometheus metrics.
//   - KIP-848 groups: 68_consumer_group_heartbeat.go,
//     69_consumer_group_describe.go.
//   - Share groups (KIP-932): share.go, share_configs.go,
//     share_coordinator.go, 76_share_group_heartbeat.go,
//     77_share_group_describe.go, 78_share_fetch.go,
//     79_share_acknowledge.go, 90_describe_share_group_offsets.go,
//     91_alter_share_group_offsets.go, 92_delete_share_group_offsets.go.
//   - Transactions and producer ids: txn_coordinator.go, txn_init.go,
//     22_init_producer_id.go, 24_add_partitions_to_txn.go,
//     25_add_offsets_to_txn.go, 26_end_txn.go, 28_txn_offset_commit.go,
//     61_describe_producers.go, 65_describe_transactions.go,
//     66_list_transactions.go.
//
// Security: who a connection is and what it may do.
//   - tls.go: the TLS handshake, a client certificate's principal.
//   - internal/tlsfiles/tlsfiles.go: package agent/internal/tlsfiles, the
//     listeners' TLS configuration, reloaded when its files change.
//   - sasl.go: SASL on a connection: handshakes, sessions and
//     re-authentication (KIP-368), the exchange driven by the reader.
//   - internal/sasl/sasl.go, internal/sasl/scram.go, internal/sasl/oauth.go:
//     package agent/internal/sasl, the mechanisms' server side (SCRAM,
//     PLAIN, OAUTHBEARER against a JWKS), the SCRAM credentials and the
//     failed attempts per address.
//   - principal.go: a connection's principal, re-authentication (KIP-368).
//   - 17_sasl_handshake.go, 36_sasl_authenticate.go: the SASL APIs.
//   - authz.go: the helpers handlers call to authorize.
//   - internal/authz/authz.go: package agent/internal/authz, the ACL
//     authorizer: Kafka's rules over a snapshot of the stored ACLs, and
//     each connection's decision cache.
//   - 29_describe_acls.go, 30_create_acls.go, 31_delete_acls.go: ACLs.
//   - 50_describe_user_scram_credentials.go,
//     51_alter_user_scram_credentials.go: SCRAM users.
//   - httpauth.go: authentication of the HTTP endpoints.
//
// Quotas and limits:
//   - quota.go: client quotas: charging requests, throttling, the stored
//     quotas.
//   - internal/quota/quota.go, internal/quota/rate.go: package
//     agent/internal/quota: Kafka's precedence, the sensors and their
//     rate windows, throttle times; pure.
//   - limits.go: counting and logging of hit limits.
//   - 48_describe_client_quotas.go, 49_alter_client_quotas.go: quota APIs.
//
// Memory: the byte budgets every held byte is charged to.
//   - memory.go: MemoryBudget, the budgets and their flags.
//   - internal/budget/budget.go, internal/budget/frame.go: package
//     agent/internal/budget: claims, the small frames' reserve, held frames.
//
// # Lock order
//
// "A before B" means B may be taken while A is held, never the reverse. The
// order is partial; two locks not related below are never held together.
//
//	group entry mu (groupEntry's lease.State)    before  coordinator.mu
//	group entry mu                               before  Agent.viewMu
//	group entry mu                               before  topicCache.mu
//	group entry mu                               before  shares.mu
//	group entry mu                               before  authz.Cache.mu
//	txn entry mu (txnEntry's lease.State)        before  txnCoordinator.mu
//	txn entry mu                                 before  Agent.viewMu
//	txn entry mu                                 before  topicCache.mu
//	txn entry mu                                 before  batcher.cutMu
//	txn entry mu                                 before  batcher.mu
//	batcher.cutMu                                before  batcher.mu
//	clientQuotas.loadMu                          before  quota.Sensors.mu
//	clientQuotas.loadMu                          before  Agent.viewMu
//	quota.Sensors.mu                             before  quota's sensor.mu
//
// Never held together: a group entry and a transaction entry (no
// transaction path enters a group while holding its transaction entry:
// TxnOffsetCommit checks the group with no transaction entry held); two
// entries of one coordinator; an entry taken under its coordinator's map
// mutex (liveState lets go of coordinator.mu before it tries the entry,
// and only with TryLock).
//
// Leaves (nothing is taken under them): Agent.viewMu, Agent.connMu,
// broadcaster.mu, authz.Authorizer.loadMu, authz.Cache.mu, batcher.mu,
// coordinator.mu, txnCoordinator.mu, heads.mu, lag.Monitor.mu, limits.mu,
// sasl.Verifier.mu, quota's sensor.mu, readahead.ReadAhead.mu, sasl.Failures.mu,
// shares.mu, tlsfiles.Files.mu, topicCache.mu and budget.Budget.mu (its OnWait
// callback must not lock).
//
// Locks held across waits other than locks: an entry's mu is held across
// the store I/O of one operation (so one key's operations run in order); a
// transaction entry's mu is also held while its markers go through the
// batcher and commit (batcher.add may wait for buffer room, batcher.cut
// for a flush slot); authorizer.loadMu and clientQuotas.loadMu across their
// store reads; tlsfiles.Files.mu across reading the certificate files. None of
// those waits needs a lock held by their holder: flushes take no entry.
//
// # Adding a Kafka API
//
//  1. A file NN_<api>.go named by the API key, opening with a comment: the
//     versions served, the behaviour, the version notes.
//  2. Its init registers the versions: apis.Register(kafkaproto.Versions{
//     Key, AdvertisedMin, HandledMin, Max}). ApiVersions advertises the
//     range; conn.go closes the connection, unanswered, on a version outside
//     the handled range before any handler runs (as Kafka 4 does; ApiVersions
//     excepted, KIP-511); the table panics on a key registered twice.
//  3. One case in the switch of apis.go (handle) calling
//     func (a *Agent) handleX(ctx context.Context, r *request) (kmsg.Response, error).
//     Build the answer with req.ResponseKind() and kmsg.New… constructors so
//     new fields get Kafka's defaults.
//  4. Authorize before revealing a resource: a.authorize, a.authorizeCluster,
//     a.configAuthz, a.describeGroupAccess (authz.go). A denied topic or
//     group is answered with its *_AUTHORIZATION_FAILED code whether it
//     exists or not, so denial does not tell a client what exists.
//  5. Failures are Kafka error codes in the response (kerr), per partition
//     or resource where the API has them. A returned Go error closes the
//     connection: only for a request that cannot be answered at all.
//     Nothing a client sends may panic the process (FuzzAgentRequest seeds
//     every registered version of every API).
//  6. Tests: a raw request test in this package (newTestAgent, dialRaw,
//     rawConn.send and read, at every registered version, as
//     TestAdminAPIsAnswered does), a client test in package integration
//     against a real floe process, and a regression test per fixed bug.
//  7. The row of docs/compatibility.md's API table: go run ./cmd/docgen
//     writes the versions; write the notes (what floe does differently from
//     Kafka) by hand. TestDocsUpToDate fails until the table is regenerated.
package agent
