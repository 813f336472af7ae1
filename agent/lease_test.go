package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"floe/agent/internal/lease"
	"floe/metadata"
	"floe/metadata/sqlite"
	"floe/storage/mem"
)

// leaseStore holds the store call named by hang until its context ends,
// as a store slower than any timeout would.
type leaseStore struct {
	metadata.Store
	hang atomic.Value // string: the op to hold, "" for none
}

func (s *leaseStore) wait(ctx context.Context, op string) error {
	if v, _ := s.hang.Load().(string); v == op {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *leaseStore) AcquireCoordinatorLease(ctx context.Context, name, owner string, ttl time.Duration) (metadata.CoordinatorLease, error) {
	if err := s.wait(ctx, "AcquireCoordinatorLease"); err != nil {
		return metadata.CoordinatorLease{}, err
	}
	return s.Store.AcquireCoordinatorLease(ctx, name, owner, ttl)
}

func (s *leaseStore) SaveTxn(ctx context.Context, t metadata.Transaction) error {
	if err := s.wait(ctx, "SaveTxn"); err != nil {
		return err
	}
	return s.Store.SaveTxn(ctx, t)
}

// newLeaseAgent starts an agent over the SQLite file path (shared by the
// agents of one test) through a leaseStore, with the leased owners'
// timeout shortened to timeout.
func newLeaseAgent(t *testing.T, path string, timeout time.Duration, opts ...func(*Config)) (*Agent, *leaseStore) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	ls := &leaseStore{Store: store}
	ls.hang.Store("")
	cfg := DefaultConfig()
	cfg.KafkaAddr, cfg.HTTPAddr = "127.0.0.1:0", ""
	cfg.HeartbeatInterval = 100 * time.Millisecond
	cfg.GroupInitialRebalanceDelay = 0
	for _, o := range opts {
		o(&cfg)
	}
	a := New(cfg, ls, mem.New(), nil)
	a.coord.leases.Timeout, a.txn.leases.Timeout = timeout, timeout
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ls.hang.Store("")
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Close(cctx); err != nil {
			t.Error(err)
		}
		store.Close()
	})
	return a, ls
}

// directClient is a client whose requests go to a's broker only, with
// JoinGroup at most v3 (no MEMBER_ID_REQUIRED round).
func directClient(t *testing.T, a *Agent) (*kgo.Client, *kgo.Broker) {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(int16(kmsg.JoinGroup), 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.KafkaAddr()), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl, cl.Broker(int(a.NodeID()))
}

// joinReq is a classic consumer JoinGroup of group g: the range
// protocol, 30 s session and rebalance timeouts.
func joinReq(g string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType = g, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	req.Protocols = append(req.Protocols, p)
	return req
}

func heartbeat(t *testing.T, ctx context.Context, br *kgo.Broker, g, member string, gen int32) int16 {
	t.Helper()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = g, member, gen
	hr, err := hb.RequestWith(ctx, br)
	if err != nil {
		t.Fatal(err)
	}
	return hr.ErrorCode
}

func initTxnID(t *testing.T, ctx context.Context, br *kgo.Broker, id string) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp, err := req.RequestWith(ctx, br)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// entry is what the coordinators' entries have in common.
type entry interface {
	lease.Entry
	Lock()
	Unlock()
	Held() bool
	EndTrust()
}

// heldEntry waits until l has a loaded entry for key.
func heldEntry[E entry](t *testing.T, l *lease.Owner[E], key string) E {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if e, ok := l.Lookup(key); ok {
			e.Lock()
			held := e.Held()
			e.Unlock()
			if held {
				return e
			}
		}
	}
	t.Fatalf("no loaded entry for %s", key)
	panic("unreachable")
}

// steal gives the lease name of e to another owner behind the agent's back
// (as a store partition long enough for it to expire would) and ends the
// agent's local trust in it, as a missed renewal does.
func steal(t *testing.T, ctx context.Context, store metadata.Store, a *Agent, name string, e entry) {
	t.Helper()
	if err := store.ReleaseCoordinatorLease(ctx, name, a.id); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AcquireCoordinatorLease(ctx, name, "thief", time.Minute); err != nil {
		t.Fatal(err)
	}
	e.Lock()
	e.EndTrust()
	e.Unlock()
}

// waitGone waits until l has no entry for key.
func waitGone[E entry](t *testing.T, l *lease.Owner[E], key string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, ok := l.Lookup(key); !ok {
			return
		}
	}
	t.Fatalf("entry %s still held", key)
}

// TestGroupLeaseLostMidOperation: while a JoinGroup is parked in the
// group, another owner takes the group's lease; the coordinator stops
// acting for the group: the parked join is answered NOT_COORDINATOR, the
// entry is dropped, and the next request is NOT_COORDINATOR too.
func TestGroupLeaseLostMidOperation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, ls := newLeaseAgent(t, filepath.Join(t.TempDir(), "meta.db"), storeTimeout,
		func(c *Config) { c.GroupInitialRebalanceDelay = 20 * time.Second })
	_, br := directClient(t, a)
	const g = "lost"
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		jr, err := joinReq(g).RequestWith(ctx, br)
		if err != nil {
			jr = nil
		}
		joined <- jr
	}()
	e := heldEntry(t, a.coord.leases, g)
	// The join is parked for the initial rebalance delay.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		e.Lock()
		members := len(e.g.MemberMetadata())
		e.Unlock()
		if members > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the join never reached the group")
		}
	}
	steal(t, ctx, ls.Store, a, metadata.GroupLeaseName(g), e)
	select {
	case jr := <-joined:
		if jr == nil || jr.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("parked join = %+v, want NOT_COORDINATOR", jr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked join not answered after the lease was lost")
	}
	waitGone(t, a.coord.leases, g)
	if code := heartbeat(t, ctx, br, g, "m", 1); code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat after the lease was lost = %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	if l, err := ls.Store.AcquireCoordinatorLease(ctx, metadata.GroupLeaseName(g), "thief", time.Minute); err != nil || l.Owner != "thief" {
		t.Fatalf("lease after the loss = %+v, %v; want still the thief's", l, err)
	}
}

// TestTxnLeaseLostMidOperation: another owner takes a transactional id's
// lease between two requests of a producer; the next request is answered
// NOT_COORDINATOR and the entry is dropped (the transaction coordinator
// used to keep acting until its local deadline without asking the store).
func TestTxnLeaseLostMidOperation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, ls := newLeaseAgent(t, filepath.Join(t.TempDir(), "meta.db"), storeTimeout)
	_, br := directClient(t, a)
	const id = "lost-txn"
	ir := initTxnID(t, ctx, br, id)
	if ir.ErrorCode != 0 {
		t.Fatalf("init = %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	e := heldEntry(t, a.txn.leases, id)
	steal(t, ctx, ls.Store, a, metadata.TxnLeaseName(id), e)
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
	er, err := end.RequestWith(ctx, br)
	if err != nil || er.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("EndTxn after the lease was lost = %+v, %v; want NOT_COORDINATOR", er, err)
	}
	waitGone(t, a.txn.leases, id)
}

// TestLeaseStoreSlowPastTimeout: a store that does not answer holds a
// request no longer than the leased owner's timeout, and the answer is the
// retriable COORDINATOR_NOT_AVAILABLE; for transactional ids, whose store
// calls used to be unbounded, both the lease and a save inside the
// operation.
func TestLeaseStoreSlowPastTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const timeout = 300 * time.Millisecond
	a, ls := newLeaseAgent(t, filepath.Join(t.TempDir(), "meta.db"), timeout)
	_, br := directClient(t, a)
	bounded := func(what string, code int16, took time.Duration) {
		t.Helper()
		if code != kerr.CoordinatorNotAvailable.Code {
			t.Errorf("%s with a hung store = %v, want COORDINATOR_NOT_AVAILABLE", what, kerr.ErrorForCode(code))
		}
		if took < timeout || took > timeout+2*time.Second {
			t.Errorf("%s with a hung store took %v, want about %v", what, took, timeout)
		}
	}

	ls.hang.Store("AcquireCoordinatorLease")
	start := time.Now()
	bounded("group heartbeat", heartbeat(t, ctx, br, "slow", "m", 1), time.Since(start))
	start = time.Now()
	bounded("InitProducerId", initTxnID(t, ctx, br, "slow-txn").ErrorCode, time.Since(start))
	if _, ok := a.coord.leases.Lookup("slow"); ok {
		t.Error("the group entry stayed after the store timed out")
	}

	ls.hang.Store("SaveTxn")
	start = time.Now()
	bounded("InitProducerId (save)", initTxnID(t, ctx, br, "slow-txn").ErrorCode, time.Since(start))

	ls.hang.Store("")
	if code := heartbeat(t, ctx, br, "slow", "m", 1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat once the store answers = %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(code))
	}
	if ir := initTxnID(t, ctx, br, "slow-txn"); ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId once the store answers = %v", kerr.ErrorForCode(ir.ErrorCode))
	}
}

// TestLeaseTrustEndedKeptAtSameEpoch is the expiry behaviour: an entry
// whose local trust ended while nobody took its lease is re-acquired by
// the tick at the same epoch and keeps its state (a parked join stays
// parked); the epoch proves nobody served the group meanwhile.
func TestLeaseTrustEndedKeptAtSameEpoch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, _ := newLeaseAgent(t, filepath.Join(t.TempDir(), "meta.db"), storeTimeout,
		func(c *Config) { c.GroupInitialRebalanceDelay = 20 * time.Second })
	_, br := directClient(t, a)
	const g = "kept"
	joined := make(chan struct{})
	go func() {
		defer close(joined)
		_, _ = joinReq(g).RequestWith(ctx, br)
	}()
	e := heldEntry(t, a.coord.leases, g)
	e.Lock()
	epoch, st := e.Epoch(), e.g
	e.EndTrust()
	e.Unlock()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		e.Lock()
		trusted, held, ep, same := e.Trusted(time.Now()), e.Held(), e.Epoch(), e.g == st
		e.Unlock()
		if trusted {
			if !held || ep != epoch || !same {
				t.Fatalf("re-acquired: held %v, epoch %d (was %d), same state %v", held, ep, epoch, same)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tick never re-acquired the lease")
		}
	}
	select {
	case <-joined:
		t.Fatal("the parked join was answered: the state was not kept")
	default:
	}
	cancel()
	<-joined
}

// TestLeaseOrphanReleased: a lease of this agent that no entry holds (a
// drop while the store did not answer leaves one) is released by the
// renewal, instead of being renewed forever and keeping the key's next
// owner out.
func TestLeaseOrphanReleased(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, ls := newLeaseAgent(t, filepath.Join(t.TempDir(), "meta.db"), storeTimeout,
		func(c *Config) { c.AgentTTL = 900 * time.Millisecond })
	for _, name := range []string{metadata.GroupLeaseName("orphan"), metadata.TxnLeaseName("orphan")} {
		if _, err := ls.Store.AcquireCoordinatorLease(ctx, name, a.id, time.Minute); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err := ls.Store.AcquireCoordinatorLease(ctx, name, "next-owner", time.Minute); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("orphan lease %s never released", name)
			}
		}
	}
}

// TestLeaseHandOffOnPlacementChange: groups and transactional ids an agent
// coordinates move to an agent that joins and now owns them by placement;
// the first agent saves and releases them at its next tick, so the new one
// serves them at once (no wait for the lease to expire) with their state.
func TestLeaseHandOffOnPlacementChange(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "meta.db")
	a, _ := newLeaseAgent(t, path, storeTimeout)
	_, abr := directClient(t, a)
	type member struct {
		id  string
		gen int32
	}
	members := map[string]member{}
	producers := map[string]*kmsg.InitProducerIDResponse{}
	for i := range 16 {
		g := fmt.Sprintf("move-%d", i)
		jr, err := joinReq(g).RequestWith(ctx, abr)
		if err != nil || jr.ErrorCode != 0 {
			t.Fatalf("join %s = %+v, %v", g, jr, err)
		}
		sr := kmsg.NewPtrSyncGroupRequest()
		sr.Group, sr.MemberID, sr.Generation = g, jr.MemberID, jr.Generation
		sr.ProtocolType, sr.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID, sa.MemberAssignment = jr.MemberID, []byte("assigned-"+g)
		sr.GroupAssignment = append(sr.GroupAssignment, sa)
		if resp, err := sr.RequestWith(ctx, abr); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("sync %s = %+v, %v", g, resp, err)
		}
		members[g] = member{jr.MemberID, jr.Generation}
		id := fmt.Sprintf("move-txn-%d", i)
		ir := initTxnID(t, ctx, abr, id)
		if ir.ErrorCode != 0 {
			t.Fatalf("init %s = %v", id, kerr.ErrorForCode(ir.ErrorCode))
		}
		producers[id] = ir
	}

	b, _ := newLeaseAgent(t, path, storeTimeout)
	_, bbr := directClient(t, b)
	start := time.Now()
	for deadline := time.Now().Add(5 * time.Second); len(a.liveAgents()) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first agent never saw the second")
		}
	}
	if err := b.refreshLive(ctx); err != nil {
		t.Fatal(err)
	}
	moved := 0
	for g, m := range members {
		if a.coord.ownerOf(g).ID != b.id || b.coord.ownerOf(g).ID != b.id {
			continue
		}
		moved++
		waitGone(t, a.coord.leases, g)
		if code := heartbeat(t, ctx, bbr, g, m.id, m.gen); code != 0 {
			t.Fatalf("heartbeat of %s on the new owner = %v", g, kerr.ErrorForCode(code))
		}
		sr := kmsg.NewPtrSyncGroupRequest()
		sr.Group, sr.MemberID, sr.Generation = g, m.id, m.gen
		sr.ProtocolType, sr.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		if resp, err := sr.RequestWith(ctx, bbr); err != nil || resp.ErrorCode != 0 || string(resp.MemberAssignment) != "assigned-"+g {
			t.Fatalf("sync of %s on the new owner = %+v, %v", g, resp, err)
		}
	}
	for id, prev := range producers {
		if a.txn.isOwner(id) || !b.txn.isOwner(id) {
			continue
		}
		moved++
		waitGone(t, a.txn.leases, id)
		ir := initTxnID(t, ctx, bbr, id)
		if ir.ErrorCode != 0 || ir.ProducerID != prev.ProducerID || ir.ProducerEpoch != prev.ProducerEpoch+1 {
			t.Fatalf("init of %s on the new owner = %+v; was %d/%d", id, ir, prev.ProducerID, prev.ProducerEpoch)
		}
	}
	if moved == 0 {
		t.Skip("placement moved nothing to the second agent")
	}
	if d := time.Since(start); d > a.cfg.AgentTTL/2 {
		t.Fatalf("hand-off took %v: the leases were waited out, not released", d)
	}
}

// TestLeaseLapsedReloadedAtNewEpoch: an entry whose lease lapsed in the
// store (nobody took it) is re-acquired at a new epoch; the state it had
// may be stale, so it is read again from the store, and the members saved
// there are still known.
func TestLeaseLapsedReloadedAtNewEpoch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, ls := newLeaseAgent(t, filepath.Join(t.TempDir(), "meta.db"), storeTimeout)
	_, br := directClient(t, a)
	const g = "lapsed"
	jr, err := joinReq(g).RequestWith(ctx, br)
	if err != nil || jr.ErrorCode != 0 {
		t.Fatalf("join = %+v, %v", jr, err)
	}
	e := heldEntry(t, a.coord.leases, g)
	e.Lock()
	epoch, st := e.Epoch(), e.g
	e.Unlock()
	// The lease expires in the store; the renewal no longer returns it.
	if err := ls.Store.ReleaseCoordinatorLease(ctx, metadata.GroupLeaseName(g), a.id); err != nil {
		t.Fatal(err)
	}
	e.Lock()
	e.EndTrust()
	e.Unlock()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		e.Lock()
		ep, reloaded := e.Epoch(), e.g != st && e.g != nil
		e.Unlock()
		if ep == epoch+1 && reloaded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("epoch %d (was %d), reloaded %v", ep, epoch, reloaded)
		}
	}
	if code := heartbeat(t, ctx, br, g, jr.MemberID, jr.Generation); code != kerr.RebalanceInProgress.Code && code != 0 {
		t.Fatalf("heartbeat of the saved member after the reload = %v", kerr.ErrorForCode(code))
	}
}
