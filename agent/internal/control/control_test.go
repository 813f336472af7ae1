package control

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func answer(code int16) Func {
	return func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := kmsg.NewPtrFindCoordinatorResponse()
		resp.ErrorCode = code
		return resp, nil, true
	}
}

func codeOf(t *testing.T, s *Set, req kmsg.Request) int16 {
	t.Helper()
	resp, err, handled := s.Try(req)
	if err != nil {
		t.Fatal(err)
	}
	if !handled {
		return -1
	}
	return resp.(*kmsg.FindCoordinatorResponse).ErrorCode
}

// TestOrderDropAndKeep: functions run in the order added, the key's own
// before AnyKey's; one that handled a request is dropped unless kept; one
// that passed stays.
func TestOrderDropAndKeep(t *testing.T) {
	var s Set
	req := kmsg.NewPtrFindCoordinatorRequest()
	if got := codeOf(t, &s, req); got != -1 {
		t.Fatalf("empty set handled the request: %d", got)
	}
	var watched atomic.Int32
	s.Key(AnyKey, true, answer(99))
	s.Key(int16(kmsg.FindCoordinator), false, func(kmsg.Request) (kmsg.Response, error, bool) {
		watched.Add(1)
		return nil, nil, false
	})
	s.Key(int16(kmsg.FindCoordinator), false, answer(15))
	s.Key(int16(kmsg.FindCoordinator), false, answer(16))
	for i, want := range []int16{15, 16, 99, 99} {
		if got := codeOf(t, &s, req); got != want {
			t.Fatalf("request %d: code %d, want %d", i, got, want)
		}
	}
	if w := watched.Load(); w != 4 {
		t.Fatalf("the watching function ran %d times, want 4 (it never handles, so it stays)", w)
	}
	if _, _, handled := s.Try(kmsg.NewPtrMetadataRequest()); !handled {
		t.Fatal("AnyKey's kept function did not handle a Metadata request")
	}
}

// TestErrorHandles: an error with handled true is handed back (the agent
// closes the connection).
func TestErrorHandles(t *testing.T) {
	var s Set
	boom := errors.New("boom")
	s.Key(int16(kmsg.Produce), false, func(kmsg.Request) (kmsg.Response, error, bool) { return nil, boom, true })
	if _, err, handled := s.Try(kmsg.NewPtrProduceRequest()); !handled || !errors.Is(err, boom) {
		t.Fatalf("handled %v, err %v; want true, boom", handled, err)
	}
	if _, _, handled := s.Try(kmsg.NewPtrProduceRequest()); handled {
		t.Fatal("a function that handled a request was not dropped")
	}
}

// TestOneShotHandlesOne: of requests arriving together, a function that
// may be dropped handles exactly one, even while it sleeps.
func TestOneShotHandlesOne(t *testing.T) {
	var s Set
	release := make(chan struct{})
	s.Key(int16(kmsg.FindCoordinator), false, func(req kmsg.Request) (kmsg.Response, error, bool) {
		<-release
		return answer(15)(req)
	})
	var handled atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, ok := s.Try(kmsg.NewPtrFindCoordinatorRequest()); ok {
				handled.Add(1)
			}
		}()
	}
	close(release)
	wg.Wait()
	if h := handled.Load(); h != 1 {
		t.Fatalf("%d requests handled, want 1", h)
	}
	if n := s.n.Load(); n != 0 {
		t.Fatalf("%d functions left, want 0", n)
	}
}
