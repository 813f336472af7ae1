package agent

// DescribeLogDirs (key 35), versions 0–5.
//
// floe has no log directories: every partition lives in object storage,
// so the answer is one directory, named logDirName (not a path on any
// disk), holding every partition asked for (all of them when Topics is
// null), as Kafka lists the partitions a broker hosts. A partition's Size
// is what its records take in object storage: the bytes of the index rows
// at or above its log start (Store.PartitionSizes; a row straddling the
// log start counts whole, as Kafka counts whole segments), as produced, so
// compressed as the producer compressed them. OffsetLag is 0 and IsFuture
// false: there are no replicas to catch up. TotalBytes and UsableBytes
// (v4+) are -1: object storage has no volume size. Topics and partitions
// that do not exist are left out, as Kafka leaves out what it does not
// host. A failing store is the directory's KAFKA_STORAGE_ERROR (and from
// v3 the request's UNKNOWN_SERVER_ERROR).

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/kafkaproto"
	"floe/metadata"
)

func init() {
	apis.Register(kafkaproto.Versions{Key: int16(kmsg.DescribeLogDirs), AdvertisedMin: 0, HandledMin: 0, Max: 5})
}

// logDirName names the one "log directory" floe reports.
const logDirName = "object-storage"

func (a *Agent) handleDescribeLogDirs(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = logDirName
	dir.TotalBytes, dir.UsableBytes = -1, -1
	fail := func(err error) (kmsg.Response, error) {
		a.log.Warn("describe log dirs failed", "err", err)
		dir.ErrorCode = kerr.KafkaStorageError.Code
		dir.Topics = nil
		resp.ErrorCode = kerr.UnknownServerError.Code
		resp.Dirs = append(resp.Dirs, dir)
		return resp, nil
	}
	if !a.authorizeCluster(r, opDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code // and no dirs, as Kafka answers
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	all, err := a.topics.all(ctx)
	if err != nil {
		return fail(err)
	}
	// want holds the partitions asked for per topic; nil means every one.
	want := map[string]map[int32]bool{}
	if req.Topics == nil {
		for name := range all {
			want[name] = nil
		}
	}
	for _, rt := range req.Topics {
		if _, ok := want[rt.Topic]; !ok {
			want[rt.Topic] = map[int32]bool{}
		}
		for _, p := range rt.Partitions {
			want[rt.Topic][p] = true
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	look := newLookups()
	for _, name := range names {
		t, ok := all[name]
		if !ok {
			var err error
			if t, ok, err = a.topics.find(ctx, name, look); err != nil {
				return fail(err)
			}
		}
		if !ok {
			continue
		}
		sizes, err := a.store.PartitionSizes(ctx, t.ID)
		if err != nil {
			return fail(err)
		}
		if dt, ok := logDirTopic(t, want[name], sizes); ok {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}

// logDirTopic lists the partitions of t in parts (all when nil) that
// exist, with their sizes; false when none does.
func logDirTopic(t metadata.Topic, parts map[int32]bool, sizes map[int32]int64) (kmsg.DescribeLogDirsResponseDirTopic, bool) {
	dt := kmsg.NewDescribeLogDirsResponseDirTopic()
	dt.Topic = t.Name
	for p := range t.Partitions {
		if parts != nil && !parts[p] {
			continue
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition, dp.Size = p, sizes[p]
		dt.Partitions = append(dt.Partitions, dp)
	}
	return dt, len(dt.Partitions) > 0
}
