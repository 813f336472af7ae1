package iceberg

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	havro "github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"

	"floe/metadata"
	"floe/schemaregistry"
	"floe/schemaregistry/avro"
	"floe/schemaregistry/format"
	"floe/schemaregistry/protobuf"
)

// SchemaSource looks registered schemas up by id: the schema registry
// (schemaregistry.Server) over the metadata store.
type SchemaSource interface {
	SchemaByID(ctx context.Context, id int) (schemaregistry.Schema, error)
	// LatestSchema is the subject's latest live version and its number.
	LatestSchema(ctx context.Context, subject string) (schemaregistry.Schema, int, error)
}

// errStop ends a walk whose reader stopped pulling.
var errStop = errors.New("stopped")

// writerSchema is a registered schema (for Protobuf, one message of it)
// as a cycle uses it: its Iceberg columns and what decodes its payloads,
// or why its records cannot be rows.
type writerSchema struct {
	avro   havro.Schema
	proto  *protobuf.Schema               // the schema; its messages are writerSchemas of their own
	md     protoreflect.MessageDescriptor // a Protobuf message
	jnode  *jsonNode                      // a JSON Schema
	ice    *iceberg.Schema
	reason string // set: records go to the dead-letter table
	err    error
}

// typedWrite is one typed cycle's writing: records routed to the typed
// table or the dead-letter table, the typed table's schema evolved in the
// cycle's transaction as writer schemas need. It is used by the cycle's
// goroutine alone (iceberg-go's writer pulls the segments on it; the
// dead-letter writer has its own, fed by a channel).
type typedWrite struct {
	c       *Converter
	ctx     context.Context
	t       metadata.Topic
	dlq     *table.Table
	held    map[int32]map[int64]bool
	schemas map[string]*writerSchema // by id, and id and message index

	pending *rawRecord      // the record that needs evolve, carried to the next segment
	evolve  *iceberg.Schema // the writer schema the table must take in
	evolved bool            // the cycle's transaction has its schema update
	stopAt  *rawRecord      // the cycle ends before this record: it needs a second update
	err     error

	cfg        typedConfig
	latests    map[bool]*writerSchema // schema_latest's, by side (key: true), looked up once a cycle
	latestKeys map[bool]string

	dlqB    *dlqBuilder
	dlqW    *dlqWriter
	reasons map[string]int
}

// typedCycle converts what topic t committed since the table's last
// commit into its typed table and its dead-letter table.
func (c *Converter) typedCycle(ctx context.Context, l *metadata.JobLease, t metadata.Topic) error {
	name := TableName(t.Name)
	start := time.Now()
	tbl, err := c.tableOf(ctx, t, kindTyped, true)
	if err == nil {
		var dlq *table.Table
		if dlq, err = c.tableOf(ctx, t, kindDLQ, false); err == nil {
			return c.typedCycleOn(ctx, l, t, tbl, dlq, start)
		}
	}
	if errors.Is(err, errForeign) || errors.Is(err, errLayout) {
		c.reportOnce(name, "topic not converted", name, err)
		c.metrics.cycles.WithLabelValues(name, "foreign").Inc()
		return nil
	}
	c.failed(name, err)
	return err
}

// maxTypedRounds bounds the cycles one typed cycle runs back to back,
// each taking in one more writer schema.
const maxTypedRounds = 32

func (c *Converter) typedCycleOn(ctx context.Context, l *metadata.JobLease, t metadata.Topic, tbl, dlq *table.Table, start time.Time) error {
	for round := 1; ; round++ {
		more, err := c.typedRound(ctx, l, t, tbl, dlq, start)
		if err != nil || !more || round == maxTypedRounds {
			return err
		}
		if tbl, err = c.tableOf(ctx, t, kindTyped, false); err == nil {
			dlq, err = c.tableOf(ctx, t, kindDLQ, false)
		}
		if err != nil {
			c.failed(TableName(t.Name), err)
			return err
		}
	}
}

// typedRound is one commit of a typed cycle; more reports that it
// stopped at a record needing a second schema update, to be taken in by
// the next round.
func (c *Converter) typedRound(ctx context.Context, l *metadata.JobLease, t metadata.Topic, tbl, dlq *table.Table, start time.Time) (more bool, _ error) {
	name := TableName(t.Name)
	spans, next, err := c.plan(ctx, t, tbl)
	if err != nil {
		c.failed(name, err)
		return false, err
	}
	if len(spans) == 0 {
		c.metrics.cycles.WithLabelValues(name, "idle").Inc()
		return false, c.updateLag(ctx, t, name, next)
	}
	held, err := dlqHeld(ctx, dlq, next)
	if err != nil {
		c.failed(name, err)
		return false, err
	}
	w := &typedWrite{c: c, ctx: ctx, t: t, cfg: topicTypedConfig(t), dlq: dlq, held: held, schemas: map[string]*writerSchema{}, reasons: map[string]int{},
		latests: map[bool]*writerSchema{}, latestKeys: map[bool]string{}}
	txn, files, err := w.run(tbl, spans)
	dlqFiles, derr := w.finishDLQ()
	if err == nil {
		err = derr
	}
	if err != nil {
		c.failed(name, err)
		return false, err // the files written are orphans
	}
	for _, s := range spans {
		next[s.partition] = s.next
		if w.stopAt != nil && w.stopAt.partition == s.partition {
			next[s.partition] = w.stopAt.offset
		}
	}
	if err := l.Renew(ctx); err != nil {
		c.failed(name, err)
		return false, err
	}
	// The dead-letter table first: a crash before the typed table's
	// commit leaves it ahead, which the next cycle reads (dlqHeld).
	if len(dlqFiles) > 0 {
		if err := c.commitDLQ(ctx, w.dlq, t, dlqFiles, next); err != nil {
			c.failed(name, err)
			return false, err
		}
		for reason, n := range w.reasons {
			c.metrics.dlq.WithLabelValues(name, reason).Add(float64(n))
		}
		if c.afterDLQCommit != nil {
			if err := c.afterDLQCommit(); err != nil {
				return false, err
			}
		}
	}
	offsets := encodeOffsets(next)
	if len(files) > 0 {
		if err := txn.AddDataFiles(ctx, files, iceberg.Properties{propNextOffsets: offsets, propTopic: t.Name}); err != nil {
			c.failed(name, err)
			return false, fmt.Errorf("add data files: %w", err)
		}
	}
	if err := txn.SetProperties(iceberg.Properties{propNextOffsets: offsets}); err != nil {
		return false, err
	}
	if _, err := txn.Commit(ctx); err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			c.metrics.conflicts.WithLabelValues(name).Inc()
			c.metrics.cycles.WithLabelValues(name, "conflict").Inc()
		} else {
			c.failed(name, err)
		}
		return false, fmt.Errorf("commit: %w", err)
	}
	var rows, bytes int64
	for _, f := range files {
		rows += f.Count()
		bytes += f.FileSizeBytes()
	}
	c.metrics.cycles.WithLabelValues(name, "ok").Inc()
	c.metrics.commits.WithLabelValues(name).Inc()
	c.metrics.rows.WithLabelValues(name).Add(float64(rows))
	c.metrics.bytes.WithLabelValues(name).Add(float64(bytes))
	c.metrics.files.WithLabelValues(name).Add(float64(len(files)))
	c.log.Debug("iceberg typed commit", "table", name, "rows", rows, "files", len(files), "dlq_files", len(dlqFiles),
		"offsets", offsets, "took", time.Since(start))
	return w.stopAt != nil, c.updateLag(ctx, t, name, next)
}

// commitDLQ commits a cycle's dead-letter files with the offsets the
// cycle reached, never below those the table already has (a lost cycle's
// records beyond this one's are still in it).
func (c *Converter) commitDLQ(ctx context.Context, dlq *table.Table, t metadata.Topic, files []iceberg.DataFile, next map[int32]int64) error {
	prev, err := NextOffsets(dlq)
	if err != nil {
		return err
	}
	upto := maps.Clone(next)
	for p, n := range prev {
		upto[p] = max(upto[p], n)
	}
	offsets := encodeOffsets(upto)
	txn := dlq.NewTransaction()
	if err := txn.AssertRefSnapshotID(""); err != nil {
		return err
	}
	if err := txn.AddDataFiles(ctx, files, iceberg.Properties{propNextOffsets: offsets, propTopic: t.Name}); err != nil {
		return fmt.Errorf("add dead-letter files: %w", err)
	}
	if err := txn.SetProperties(iceberg.Properties{propNextOffsets: offsets}); err != nil {
		return err
	}
	if _, err := txn.Commit(ctx); err != nil {
		return fmt.Errorf("commit %s: %w", dlq.Identifier(), err)
	}
	return nil
}

// run writes the spans' records: segments of the typed table's data
// files, each with the table's schema as the cycle's transaction has it
// so far; a record whose writer schema the table must take in ends a
// segment, the transaction evolves the schema, and the next segment goes
// on from that record.
func (w *typedWrite) run(tbl *table.Table, spans []*span) (*table.Transaction, []iceberg.DataFile, error) {
	pull, stop := iter.Pull2(w.c.rawRecords(w.ctx, w.t, spans))
	defer stop()
	txn := tbl.NewTransaction()
	// Only on top of the snapshot this cycle read (see cycle).
	if err := txn.AssertRefSnapshotID(""); err != nil {
		return nil, nil, err
	}
	cur := tbl
	var files []iceberg.DataFile
	for {
		as, err := table.SchemaToArrowSchema(cur.Schema(), nil, true, false)
		if err != nil {
			return nil, nil, err
		}
		fileSize := w.c.cfg.TargetFileSize - dlqFileSize(w.c.cfg.TargetFileSize)
		for df, err := range writeRecords(w.ctx, cur, as, w.segment(cur, as, pull), fileSize) {
			if err != nil {
				return nil, nil, fmt.Errorf("write: %w", err)
			}
			files = append(files, df)
		}
		if w.err != nil {
			return nil, nil, w.err
		}
		if w.evolve == nil {
			return txn, files, nil
		}
		// One schema update per transaction (each asserts the schema it
		// started from, and a second one's assertion fails the commit):
		// a second writer schema to take in ends the cycle (stopAt).
		if err := txn.UpdateSchema(true, false).UnionByNameWith(w.evolve).Commit(); err != nil {
			return nil, nil, fmt.Errorf("evolve schema: %w", err)
		}
		if err := bindPendingSpec(txn); err != nil {
			return nil, nil, err
		}
		st, err := txn.StagedTable()
		if err != nil {
			return nil, nil, err
		}
		cur, w.evolve, w.evolved = st.Table, nil, true
	}
}

// rawRecords yields the spans' records one at a time (walk).
func (c *Converter) rawRecords(ctx context.Context, t metadata.Topic, spans []*span) iter.Seq2[*rawRecord, error] {
	return func(yield func(*rawRecord, error) bool) {
		stopped := false
		err := c.walk(ctx, t, spans, func(r *rawRecord) error {
			if !yield(r, nil) {
				stopped = true
				return errStop
			}
			return nil
		}, func() bool { return !stopped })
		if err != nil && !errors.Is(err, errStop) {
			yield(nil, err)
		}
	}
}

// segment yields the typed table's batches for records pulled until one
// needs the table's schema to evolve (kept in w.pending) or none is left.
func (w *typedWrite) segment(cur *table.Table, as *arrow.Schema, pull func() (*rawRecord, error, bool)) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		b := newTypedBuilder(as)
		defer b.release()
		plans := map[string]*plan{}
		refused := map[string]error{}
		for {
			r, carried := w.pending, w.pending != nil
			w.pending = nil
			if r == nil {
				var err error
				var ok bool
				if r, err, ok = pull(); !ok {
					break
				}
				if err != nil {
					w.err = err
					return
				}
			}
			evolve, err := w.route(r, cur, as, plans, refused, carried, b)
			if err != nil {
				w.err = err
				return
			}
			if evolve && w.evolved {
				w.stopAt, w.evolve = r, nil
				break
			}
			if evolve {
				w.pending = r
				break
			}
			if b.full() && !yield(b.flush(), nil) {
				return
			}
		}
		if b.rows() > 0 {
			yield(b.flush(), nil)
		}
	}
}

// protoMessage returns the message of a Protobuf schema that find finds,
// as the cycle uses it (kept under key).
func (w *typedWrite) protoMessage(key string, find func() (protoreflect.MessageDescriptor, error)) *writerSchema {
	if pm, ok := w.schemas[key]; ok {
		return pm
	}
	pm := &writerSchema{}
	md, err := find()
	if err != nil {
		pm.reason, pm.err = reasonDecode, fmt.Errorf("schema %s: %w", key, err)
	} else if pm.ice, _, err = protoValueSchema(md, nil); err != nil {
		pm.reason, pm.err = reasonUnmappable, fmt.Errorf("schema %s: %w", key, err)
	}
	pm.md = md
	w.schemas[key] = pm
	return pm
}

// inferred returns the columns json mode infers from one value, fitted
// to the table's (cur) types, as the cycle uses them.
func (w *typedWrite) inferred(v []byte, cur *table.Table, isKey bool) (*writerSchema, string, error) {
	sc, err := inferJSON(v)
	if err != nil {
		return nil, "", err
	}
	ts := cur.Schema()
	if isKey {
		ts = keyTableSchema(cur)
	}
	st, tst := sc.AsStruct(), ts.AsStruct()
	fitted := fitInferred(&st, &tst).(*iceberg.StructType)
	ice := iceberg.NewSchema(0, fitted.FieldList...)
	key := "json " + ice.String()
	if ws, ok := w.schemas[key]; ok {
		return ws, key, nil
	}
	ws := &writerSchema{ice: ice, jnode: jsonNodeOf(fitted)}
	w.schemas[key] = ws
	return ws, key, nil
}

// latest returns the schema schema_latest decodes values with: the
// latest version of the topic's value subject as of the cycle's first
// record (the registry caches versions for its SubjectTTL), for Protobuf
// the message floe.iceberg.value.protobuf.message names. A subject with
// no version sends the records to the dead-letter table.
func (w *typedWrite) latest(isKey bool, subject, message string) (*writerSchema, string, error) {
	if ws, ok := w.latests[isKey]; ok {
		return ws, w.latestKeys[isKey], nil
	}
	sc, _, err := w.c.schemas.LatestSchema(w.ctx, subject)
	if errors.Is(err, schemaregistry.ErrUnknownSubject) || errors.Is(err, schemaregistry.ErrUnknownSchema) {
		ws := &writerSchema{reason: reasonUnknown, err: fmt.Errorf("subject %s has no live schema", subject)}
		w.latests[isKey], w.latestKeys[isKey] = ws, "latest"
		return ws, "latest", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("subject %s: %w", subject, err)
	}
	ws, err := w.writer(sc.ID)
	if err != nil {
		return nil, "", err
	}
	key := strconv.Itoa(sc.ID)
	if p := ws.proto; p != nil {
		key += " " + message
		ws = w.protoMessage(key, func() (protoreflect.MessageDescriptor, error) { return protoByName(p, message) })
	}
	w.latests[isKey], w.latestKeys[isKey] = ws, key
	return ws, key, nil
}

// protoByName finds a message of a Protobuf schema by its full name
// (package.Outer.Inner); empty is the schema's first message.
func protoByName(p *protobuf.Schema, name string) (protoreflect.MessageDescriptor, error) {
	if name == "" {
		return p.Message(nil)
	}
	fd := p.Descriptor()
	rel := strings.TrimPrefix(name, ".")
	if pkg := string(fd.Package()); pkg != "" {
		if !strings.HasPrefix(rel, pkg+".") {
			return nil, fmt.Errorf("message %s: the schema's package is %s", name, pkg)
		}
		rel = rel[len(pkg)+1:]
	}
	var md protoreflect.MessageDescriptor
	msgs := fd.Messages()
	for _, part := range strings.Split(rel, ".") {
		if md = msgs.ByName(protoreflect.Name(part)); md == nil {
			return nil, fmt.Errorf("the schema has no message %s", name)
		}
		msgs = md.Messages()
	}
	return md, nil
}

// writer returns schema id as the cycle uses it; an error is the store's.
func (w *typedWrite) writer(id int) (*writerSchema, error) {
	if ws, ok := w.schemas[strconv.Itoa(id)]; ok {
		return ws, nil
	}
	ws := &writerSchema{}
	sc, err := w.c.schemas.SchemaByID(w.ctx, id)
	switch {
	case errors.Is(err, schemaregistry.ErrUnknownSchema):
		// Not kept: a schema registered later (an import) is found then.
		return &writerSchema{reason: reasonUnknown, err: fmt.Errorf("schema %d is not registered", id)}, nil
	case err != nil:
		return nil, fmt.Errorf("schema %d: %w", id, err)
	case sc.Type == format.Protobuf:
		p, ok := sc.Parsed.(*protobuf.Schema)
		if !ok {
			return nil, fmt.Errorf("schema %d: parsed as %T", id, sc.Parsed)
		}
		ws.proto = p
	case sc.Type == format.JSON:
		if ws.ice, ws.jnode, err = jsonValueSchema(sc.Parsed.Canonical()); err != nil {
			ws.reason, ws.err = reasonUnmappable, fmt.Errorf("schema %d: %w", id, err)
		}
	case sc.Type != format.Avro:
		ws.reason, ws.err = reasonFormat, fmt.Errorf("schema %d is %s", id, sc.Type)
	default:
		a, ok := sc.Parsed.(*avro.Schema)
		if !ok {
			return nil, fmt.Errorf("schema %d: parsed as %T", id, sc.Parsed)
		}
		ws.avro = a.Avro()
		if ws.ice, _, err = avroValueSchema(ws.avro, nil); err != nil {
			ws.reason, ws.err = reasonUnmappable, fmt.Errorf("schema %d: %w", id, err)
		}
	}
	w.schemas[strconv.Itoa(id)] = ws
	return ws, nil
}

// dead appends r to the dead-letter table's batch, unless a cycle that
// committed only the dead-letter table put it there already.
func (w *typedWrite) dead(r *rawRecord, reason, detail string) error {
	if w.held[r.partition][r.offset] {
		return nil
	}
	if w.dlqB == nil {
		if w.dlq == nil {
			dlq, err := w.c.tableOf(w.ctx, w.t, kindDLQ, true)
			if err != nil {
				return err
			}
			w.dlq = dlq
		}
		as, err := table.SchemaToArrowSchema(w.dlq.Schema(), nil, true, false)
		if err != nil {
			return err
		}
		w.dlqB = newDLQBuilder(as)
		w.dlqW = startDLQWriter(w.ctx, w.dlq, as, dlqFileSize(w.c.cfg.TargetFileSize))
	}
	w.dlqB.addDLQ(r, reason, detail)
	w.reasons[reason]++
	if w.dlqB.full() {
		w.dlqW.send(w.dlqB.flush())
	}
	return nil
}

// finishDLQ ends the dead-letter writer, if the cycle started one.
func (w *typedWrite) finishDLQ() ([]iceberg.DataFile, error) {
	if w.dlqW == nil {
		return nil, nil
	}
	defer w.dlqB.release()
	if w.dlqB.rows() > 0 {
		w.dlqW.send(w.dlqB.flush())
	}
	return w.dlqW.finish()
}
