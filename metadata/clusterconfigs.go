package metadata

import "context"

// ClusterConfigStore is the part of the Store that holds the dynamic
// broker configs set at the cluster default (Kafka's BROKER config
// resource named "", whose values have source
// DYNAMIC_DEFAULT_BROKER_CONFIG): what every agent and compactor applies
// to the topics that set none of their own.
type ClusterConfigStore interface {
	// ClusterConfigs returns the cluster's dynamic broker configs: never
	// nil, empty when none is set.
	ClusterConfigs(ctx context.Context) (map[string]string, error)
	// UpdateClusterConfigs changes them in one transaction, as
	// UpdateGroupConfigs changes a group's: update gets the stored configs
	// (never nil, the callee's to change) and returns the configs to store.
	// An error from update is returned (wrapped) and nothing is stored.
	// Concurrent updates apply one after the other, each seeing what the
	// previous one stored.
	UpdateClusterConfigs(ctx context.Context, update func(configs map[string]string) (map[string]string, error)) error
}
