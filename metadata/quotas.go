package metadata

import (
	"cmp"
	"context"
)

// QuotaNameKind says how an entity names one of its parts.
type QuotaNameKind int8

const (
	// QuotaAbsent: the entity has no part of this type.
	QuotaAbsent QuotaNameKind = iota
	// QuotaDefault: the part is the type's default (Kafka's null name,
	// "<default>" in kafka-configs.sh), which applies to every name that
	// has no quota of its own.
	QuotaDefault
	// QuotaNamed: the part names one user, client id or address.
	QuotaNamed
)

// QuotaName is one part of a QuotaEntity. Name is set only for
// QuotaNamed, and is never empty (Kafka refuses empty names).
type QuotaName struct {
	Kind QuotaNameKind
	Name string
}

// Named is the QuotaName of one name.
func Named(name string) QuotaName { return QuotaName{Kind: QuotaNamed, Name: name} }

// DefaultName is the QuotaName of a type's default.
var DefaultName = QuotaName{Kind: QuotaDefault}

// QuotaEntity is who a client quota applies to, as Kafka's
// ClientQuotaEntity: a user and a client id (either or both, each named or
// the default), or an ip address (named or the default). The store keeps
// what it is given; which combinations are valid is the agent's business.
type QuotaEntity struct {
	User     QuotaName
	ClientID QuotaName
	IP       QuotaName
}

// ClientQuota is one quota of an entity: a key Kafka defines
// (producer_byte_rate, consumer_byte_rate, request_percentage,
// controller_mutation_rate, connection_creation_rate) and its value.
type ClientQuota struct {
	Entity QuotaEntity
	Key    string
	Value  float64
}

// QuotaChange sets an entity's key to Value, or removes it.
type QuotaChange struct {
	Entity QuotaEntity
	Key    string
	Value  float64
	Remove bool
}

// CompareQuotas orders quotas as ClientQuotas returns them: by user, client
// id and ip (absent, then default, then names in byte order), then key.
func CompareQuotas(x, y ClientQuota) int {
	name := func(a, b QuotaName) int { return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name)) }
	return cmp.Or(name(x.Entity.User, y.Entity.User), name(x.Entity.ClientID, y.Entity.ClientID),
		name(x.Entity.IP, y.Entity.IP), cmp.Compare(x.Key, y.Key))
}

// QuotaStore is the part of the Store that holds client quotas (Kafka's
// DescribeClientQuotas and AlterClientQuotas). Every change bumps the
// quota version in its transaction, so agents, which cache every quota
// to enforce them, reload when QuotaVersion moves.
type QuotaStore interface {
	// AlterClientQuotas applies changes in one transaction: a set
	// replaces the key's value, a removal of a key the entity does not
	// have is no error.
	AlterClientQuotas(ctx context.Context, changes []QuotaChange) error
	// ClientQuotas returns every stored quota, sorted by CompareQuotas.
	// Quotas are few (one row per entity and key), so callers filter.
	ClientQuotas(ctx context.Context) ([]ClientQuota, error)
	// QuotaVersion is a number that changes whenever quotas change (0
	// before any change).
	QuotaVersion(ctx context.Context) (int64, error)
}
