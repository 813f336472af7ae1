package iceberg

import (
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// A typed table's partition spec may name value columns, which the table
// only has once it takes in its first writer schema. Such a table is
// created unpartitioned with the spec in propPendingSpec; the schema
// update that first adds value columns binds the spec to the evolved
// schema and makes it the table's spec, in the same commit, before any
// row with value columns is written. A record whose schemas would evolve
// the table so that the spec cannot bind (a column missing, nested in a
// list or a map, or of a type its transform does not take) goes to the
// dead-letter table (reasonPartitionSpec) and the table is left as it
// was: it never gets a partition spec other than the one asked for.
// Later evolutions keep the spec's columns (a union never drops one).

// propPendingSpec holds, until it binds, the ConfigPartitionSpec a typed
// table was created with that names value columns.
const propPendingSpec = "floe.partition-spec.pending"

// errPartitionSpec marks writer schemas the pending spec cannot bind to.
var errPartitionSpec = errors.New("the table's partition spec does not bind")

// typedSpec is the spec a typed table is created with, from spec (a
// ConfigPartitionSpec), and the spec left pending (empty: none).
func typedSpec(spec string) (iceberg.PartitionSpec, string, error) {
	terms, err := parseSpecTerms(spec)
	if err != nil {
		return iceberg.PartitionSpec{}, "", err
	}
	if !onlyKafkaColumns(terms) {
		return *iceberg.UnpartitionedSpec, spec, nil
	}
	ps, err := bindSpec(spec, terms, TypedSchema(), true)
	return ps, "", err
}

// pendingSpec binds the spec tbl has pending, if any, to schema sc: ok
// is false when none is pending; an error wraps errPartitionSpec.
func pendingSpec(tbl *table.Table, sc *iceberg.Schema) (iceberg.PartitionSpec, bool, error) {
	spec, ok := tbl.Properties()[propPendingSpec]
	if !ok {
		return iceberg.PartitionSpec{}, false, nil
	}
	terms, err := parseSpecTerms(spec)
	if err == nil {
		var ps iceberg.PartitionSpec
		if ps, err = bindSpec(spec, terms, sc, true); err == nil {
			return ps, true, nil
		}
	}
	return iceberg.PartitionSpec{}, true, fmt.Errorf("%w: %s %q: %w", errPartitionSpec, ConfigPartitionSpec, spec, err)
}

// bindPendingSpec makes the spec txn's table has pending its spec, bound
// to the schema txn has staged, and clears it; nothing if none is
// pending. An error wraps errPartitionSpec.
func bindPendingSpec(txn *table.Transaction) error {
	st, err := txn.StagedTable()
	if err != nil {
		return err
	}
	ps, ok, err := pendingSpec(st.Table, st.Schema())
	if !ok || err != nil {
		return err
	}
	us := txn.UpdateSpec(true)
	for _, f := range ps.Fields() {
		col, _ := st.Schema().FindColumnName(f.SourceID())
		us.AddField(col, f.Transform, f.Name)
	}
	if err := us.Commit(); err != nil {
		return fmt.Errorf("%w: %w", errPartitionSpec, err)
	}
	return txn.RemoveProperties([]string{propPendingSpec})
}

// pendingBinds runs, on a throwaway transaction, what the cycle commits
// when tbl takes in writer schema ice (its schema update, then
// bindPendingSpec), so that a schema the pending spec cannot bind to is
// found before the cycle takes it in. An error wraps errPartitionSpec.
func pendingBinds(tbl *table.Table, ice *iceberg.Schema) error {
	if _, ok := tbl.Properties()[propPendingSpec]; !ok {
		return nil
	}
	txn := tbl.NewTransaction()
	if err := txn.UpdateSchema(true, false).UnionByNameWith(ice).Commit(); err != nil {
		return fmt.Errorf("%w: %w", errPartitionSpec, err)
	}
	return bindPendingSpec(txn)
}
