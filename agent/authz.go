package agent

// The agent's side of authorization: the API handlers' helpers over the
// authorizer (agent/internal/authz), which holds the ACLs and decides.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent/internal/authz"
)

// AuthzConfig configures ACL authorization (floe's --authorizer flags).
type AuthzConfig = authz.Config

// clusterName is the name of the one CLUSTER resource.
const clusterName = authz.ClusterName

// ACL enum values the checks use, as kmsg names them.
const (
	opAll             = kmsg.ACLOperationAll
	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opCreate          = kmsg.ACLOperationCreate
	opDelete          = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opClusterAction   = kmsg.ACLOperationClusterAction
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs
	opIdempotentWrite = kmsg.ACLOperationIdempotentWrite

	resTopic   = kmsg.ACLResourceTypeTopic
	resGroup   = kmsg.ACLResourceTypeGroup
	resCluster = kmsg.ACLResourceTypeCluster
	resTxnID   = kmsg.ACLResourceTypeTransactionalId
)

// Helpers the API handlers call.

// authorize decides op on the resource (typ, name) for the request's
// connection.
func (a *Agent) authorize(r *request, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if !a.authz.Enabled() {
		return true // before r.c: handlers are called without a connection in tests
	}
	return a.authz.Allowed(&r.c.authz, r.c.principal(), r.c.host(), op, typ, name)
}

// authorizeCluster decides op on the cluster.
func (a *Agent) authorizeCluster(r *request, op kmsg.ACLOperation) bool {
	return a.authorize(r, op, resCluster, clusterName)
}

// authzEnabled reports whether requests are checked against ACLs.
func (a *Agent) authzEnabled() bool { return a.authz.Enabled() }

// configAuthz checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config
// resource as Kafka maps it: a topic's own, a group's own, the cluster's
// for brokers, broker loggers and client metrics. nil when allowed, or for
// types the handler refuses anyway.
func (a *Agent) configAuthz(r *request, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) *kerr.Error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !a.authorize(r, op, resTopic, name) {
			return kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !a.authorize(r, op, resGroup, name) {
			return kerr.GroupAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		if !a.authorizeCluster(r, op) {
			return kerr.ClusterAuthorizationFailed
		}
	}
	return nil
}

// The operations Kafka reports as authorized for each resource type
// (AclEntry.supportedOperations), in the bit fields of Metadata,
// DescribeCluster, DescribeGroups and ConsumerGroupDescribe.
var supportedOps = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	resTopic:   {opRead, opWrite, opCreate, opDelete, opAlter, opDescribe, opDescribeConfigs, opAlterConfigs},
	resGroup:   {opRead, opDescribe, opDelete, opDescribeConfigs, opAlterConfigs},
	resCluster: {opCreate, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite, opAlter, opDescribe},
	resTxnID:   {opDescribe, opWrite},
}

// describeGroupAccess is how a group describe (DescribeGroups,
// ConsumerGroupDescribe, ShareGroupDescribe) starts on each group: the
// error to answer it with (0: describe it) and the authorized operations
// to report (Kafka's "not asked" when the client did not ask, or when
// DESCRIBE is denied).
func (a *Agent) describeGroupAccess(r *request, group string, includeOps bool) (errCode int16, ops int32) {
	const notAsked = -2147483648
	if !a.authorize(r, opDescribe, resGroup, group) {
		return kerr.GroupAuthorizationFailed.Code, notAsked
	}
	if !includeOps {
		return 0, notAsked
	}
	return 0, a.authorizedOps(r, resGroup, group)
}

// authorizedOps is the bit field (1<<operation) of the operations r may do
// on a resource; every supported one with authorization off, as Kafka
// reports without an authorizer.
func (a *Agent) authorizedOps(r *request, typ kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOps[typ] {
		if a.authorize(r, op, typ, name) {
			bits |= 1 << op
		}
	}
	return bits
}
