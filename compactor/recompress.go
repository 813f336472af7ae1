package compactor

import (
	"context"

	"floe/kafkaproto"
	"floe/metadata"
)

// The codec a topic's batches are stored in is the producer's until the
// compactor rewrites them: produce keeps batches byte for byte as sent
// (their CRCs end to end), and a topic whose compression.type names a
// codec (topicconfig.Compression) gets it at the merges and key
// compactions that rewrite its batches. Kafka recompresses on produce
// instead; a floe client sees the same records and offsets either way, in
// the producer's codec until the batch's first merge (minutes: level 0
// objects merge within MaxWait), then in the topic's.

// topicCodecs returns the codec of every topic whose compression.type is
// not producer, read from the store as retention reads its configs: a
// change applies from the next merge on.
func (c *Compactor) topicCodecs(ctx context.Context) (map[metadata.TopicID]kafkaproto.Compression, error) {
	topics, err := c.store.Topics(ctx)
	if err != nil {
		return nil, err
	}
	var codecs map[metadata.TopicID]kafkaproto.Compression
	for _, t := range topics {
		if cc, ok := c.defaults.Get().Compression(t.Configs); ok {
			if codecs == nil {
				codecs = map[metadata.TopicID]kafkaproto.Compression{}
			}
			codecs[t.ID] = cc
		}
	}
	return codecs, nil
}

// recompressRows reads the rows (sorted by compareRows) of topics with a
// codec and returns, by index in rows, the batches of those that changed,
// recompressed (kafkaproto.Recompress): a merge must know its object's
// size before it streams the first byte, and a recompressed row's is known
// only once it is done. So these rows are held in memory, and once they
// hold MergeBufferBytes the rest of the job's rows are copied as they are:
// the next level's merge recompresses them. Rows already in their topic's
// codec cost a read and nothing else.
//
// A batch that does not recompress (its CRC or records do not hold) is
// kept as it was and counted (floe_compactor_recompress_skipped_batches_total):
// merging copies it as it always did, and a fresh CRC must not hide the
// damage from consumers. Bytes that contradict their row fail the job
// (*unreadableError), as copyRow does.
func (c *Compactor) recompressRows(ctx context.Context, rows []metadata.IndexEntry, srcs map[string]*source, p *pacer) (map[int][]byte, error) {
	codecs, err := c.topicCodecs(ctx)
	if len(codecs) == 0 || err != nil {
		return nil, err
	}
	var out map[int][]byte
	var held int64
	for i, r := range rows {
		cc, ok := codecs[r.TopicID]
		if !ok || held >= c.cfg.MergeBufferBytes {
			continue
		}
		var buf []byte
		var changed, skipped int
		err := eachBatch(ctx, srcs[r.ObjectKey], r, p, func(_ kafkaproto.BatchHeader, b []byte) error {
			nb, ok, err := kafkaproto.Recompress(b, cc)
			switch {
			case err != nil:
				nb = b
				skipped++
			case ok:
				changed++
			}
			if buf == nil {
				buf = make([]byte, 0, r.ByteLength)
			}
			buf = append(buf, nb...)
			return nil
		})
		if err != nil {
			return nil, err
		}
		c.metrics.recompressed.Add(float64(changed))
		c.metrics.recompressSkipped.Add(float64(skipped))
		if changed > 0 {
			if out == nil {
				out = map[int][]byte{}
			}
			out[i] = buf
			held += int64(len(buf))
		}
	}
	return out, nil
}
