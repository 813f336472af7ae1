package agent

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/metadata"
)

// TestTxnRequests drives the transaction coordinator's requests one by one
// and checks every answer, including the error paths clients rely on.
func TestTxnRequests(t *testing.T) {
	ta := newParallelAgent(t)
	ctx := context.Background()
	cl := ta.client(t)
	ta.createTopic(t, cl, "t", 2)
	code := func(what string, got int16, want *kerr.Error) {
		t.Helper()
		w := int16(0)
		if want != nil {
			w = want.Code
		}
		if got != w {
			t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
		}
	}
	initPID := func() (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrInitProducerIDRequest()
		id := "adm"
		req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		code("InitProducerId", resp.ErrorCode, nil)
		return resp.ProducerID, resp.ProducerEpoch
	}
	addParts := func(pid int64, epoch int16, verify bool, topic string, parts ...int32) []int16 {
		t.Helper()
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "adm", pid, epoch, verify
		tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: parts}}
		req.Transactions = append(req.Transactions, tx)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		var codes []int16
		for _, tt := range resp.Transactions {
			for _, st := range tt.Topics {
				for _, sp := range st.Partitions {
					codes = append(codes, sp.ErrorCode)
				}
			}
		}
		return codes
	}
	txnCommit := func(pid int64, epoch int16, group string) int16 {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = 2 // no generation: any committer
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "adm", group, pid, epoch
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 1, 42
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	endTxn := func(pid int64, epoch int16, commit bool) int16 {
		t.Helper()
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "adm", pid, epoch, commit
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}

	pid, epoch := initPID()
	if pid < 0 || epoch != 0 {
		t.Fatalf("InitProducerId = %d/%d", pid, epoch)
	}
	codes := addParts(pid+1, epoch, false, "t", 0)
	code("wrong producer id", codes[0], kerr.InvalidProducerIDMapping)
	codes = addParts(pid, epoch, false, "t", 0, 7)
	code("partition of a failed request", codes[0], kerr.OperationNotAttempted)
	code("unknown partition", codes[1], kerr.UnknownTopicOrPartition)
	code("verify before adding", addParts(pid, epoch, true, "t", 0)[0], kerr.InvalidTxnState)
	code("add", addParts(pid, epoch, false, "t", 0)[0], nil)
	code("verify after adding", addParts(pid, epoch, true, "t", 0)[0], nil)

	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{"adm", "nope"}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	d := dresp.TransactionStates[0]
	if d.State != "Ongoing" || d.ProducerID != pid || d.TimeoutMillis != 60000 || d.StartTimestamp <= 0 ||
		len(d.Topics) != 1 || d.Topics[0].Topic != "t" || len(d.Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeTransactions = %+v", d)
	}
	code("describe unknown id", dresp.TransactionStates[1].ErrorCode, kerr.TransactionalIDNotFound)
	lreq := kmsg.NewPtrListTransactionsRequest()
	lreq.StateFilters = []string{"Ongoing", "Bogus"}
	lresp, err := lreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.TransactionStates) != 1 || lresp.TransactionStates[0].TransactionalID != "adm" ||
		len(lresp.UnknownStateFilters) != 1 || lresp.UnknownStateFilters[0] != "Bogus" {
		t.Fatalf("ListTransactions = %+v", lresp)
	}

	// Offsets: only for an added group; visible at commit.
	code("offsets of a group not added", txnCommit(pid, epoch, "g"), kerr.InvalidTxnState)
	areq := kmsg.NewPtrAddOffsetsToTxnRequest()
	areq.TransactionalID, areq.ProducerID, areq.ProducerEpoch, areq.Group = "adm", pid, epoch, "g"
	aresp, err := areq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	code("AddOffsetsToTxn", aresp.ErrorCode, nil)
	code("TxnOffsetCommit", txnCommit(pid, epoch, "g"), nil)
	if offs, err := ta.store.FetchOffsets(ctx, "g"); err != nil || len(offs) != 0 {
		t.Fatalf("offsets visible before the commit: %+v %v", offs, err)
	}
	code("EndTxn commit", endTxn(pid, epoch, true), nil)
	offs, err := ta.store.FetchOffsets(ctx, "g")
	if err != nil || len(offs) != 1 || offs[0].Topic != "t" || offs[0].Partition != 1 || offs[0].Offset != 42 {
		t.Fatalf("offsets after the commit: %+v %v", offs, err)
	}
	if pend, err := ta.store.PendingTxnPartitions(ctx, "g"); err != nil || len(pend) != 0 {
		t.Fatalf("pending after the commit: %+v %v", pend, err)
	}
	code("EndTxn commit retried", endTxn(pid, epoch, true), nil)
	code("EndTxn abort after commit", endTxn(pid, epoch, false), kerr.InvalidTxnState)
	if tx, err := ta.store.LoadTxn(ctx, "adm"); err != nil || tx.State != metadata.TxnCompleteCommit {
		t.Fatalf("stored state %+v %v", tx, err)
	}

	// A new instance bumps the epoch; the old one is fenced everywhere.
	pid2, epoch2 := initPID()
	if pid2 != pid || epoch2 != 1 {
		t.Fatalf("second InitProducerId = %d/%d, want %d/1", pid2, epoch2, pid)
	}
	code("stale AddPartitionsToTxn", addParts(pid, 0, false, "t", 1)[0], kerr.ProducerFenced)
	code("stale EndTxn", endTxn(pid, 0, true), kerr.ProducerFenced)
	code("stale TxnOffsetCommit", txnCommit(pid, 0, "g"), kerr.ProducerFenced)
	code("new epoch adds", addParts(pid, 1, false, "t", 1)[0], nil)
	code("abort", endTxn(pid, 1, false), nil)
}

// TestTxnNotCoordinator: requests for an id placed on another agent are
// refused with NOT_COORDINATOR.
func TestTxnNotCoordinator(t *testing.T) {
	ta := newParallelAgent(t)
	ta.viewMu.Lock()
	ta.live = append(ta.live, metadata.Agent{ID: "other", NodeID: 99, Host: "127.0.0.1", Port: 1})
	ta.viewMu.Unlock()
	var foreign string
	for i := 0; foreign == ""; i++ {
		if id := string(rune('a'+i%26)) + string(rune('a'+i/26)); !ta.txn.isOwner(id) {
			foreign = id
		}
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID = foreign
	r, err := ta.handleEndTxn(context.Background(), &request{req: req})
	if err != nil {
		t.Fatal(err)
	}
	resp := r.(*kmsg.EndTxnResponse)
	if resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("EndTxn for %q: %v, want NOT_COORDINATOR", foreign, kerr.ErrorForCode(resp.ErrorCode))
	}
}
