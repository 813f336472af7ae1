package agent

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetFetchUnstableWhileTxnOpen checks that offsets committed inside an
// open transaction answer UNSTABLE_OFFSET_COMMIT to a RequireStable fetch, and
// become the committed offsets once the transaction commits.
func TestOffsetFetchUnstableWhileTxnOpen(t *testing.T) {
	ta := newParallelAgent(t)
	cl := ta.client(t)
	ta.createTopic(t, cl, "in", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	txnID := "txn-offsets"

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = &txnID
	init.TransactionTimeoutMillis = 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %v", err, kerr.ErrorForCode(ir.ErrorCode))
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, ir.ProducerID, ir.ProducerEpoch, "g"
	if ar, err := add.RequestWith(ctx, cl); err != nil || ar.ErrorCode != 0 {
		t.Fatalf("add offsets to txn: %v %+v", err, ar)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = txnID, "g", ir.ProducerID, ir.ProducerEpoch
	commit.Generation = -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = "in"
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset, cp.LeaderEpoch = 0, 42, -1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr, err := commit.RequestWith(ctx, cl)
	if err != nil || cr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("txn offset commit: %v %+v", err, cr)
	}

	fetch := func(stable bool) (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 7
		req.Group = "g"
		req.RequireStable = stable
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "in", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("offset fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		p := resp.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	if off, code := fetch(true); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require-stable fetch during the transaction: offset %d code %d, want UNSTABLE_OFFSET_COMMIT", off, code)
	}
	if off, code := fetch(false); code != 0 || off != -1 {
		t.Fatalf("plain fetch during the transaction: offset %d code %d, want -1 and no error", off, code)
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txnID, ir.ProducerID, ir.ProducerEpoch, true
	if er, err := end.RequestWith(ctx, cl); err != nil || er.ErrorCode != 0 {
		t.Fatalf("end txn: %v %+v", err, er)
	}
	if off, code := fetch(true); code != 0 || off != 42 {
		t.Fatalf("after commit: offset %d code %d, want 42", off, code)
	}
}
