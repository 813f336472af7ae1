package metadata

import (
	"context"
	"fmt"
	"time"
)

// JobLease is a lease held on a background job (a compactor job, an Iceberg
// table's conversion), taken with AcquireJobLease. Renew between the steps of
// the job reports whether it is still held, so a job whose process stalled
// past the TTL stops instead of racing the process that took over.
type JobLease struct {
	store CompactionStore
	Name  string
	owner string
	ttl   time.Duration
}

// AcquireJobLease takes the lease name for owner for ttl. It returns nil
// and no error when another owner holds it.
func AcquireJobLease(ctx context.Context, s CompactionStore, name, owner string, ttl time.Duration) (*JobLease, error) {
	ok, err := s.AcquireLease(ctx, name, owner, ttl)
	if err != nil || !ok {
		return nil, err
	}
	return &JobLease{store: s, Name: name, owner: owner, ttl: ttl}, nil
}

// Renew extends the lease by its TTL from now; an error means it is no
// longer held (or the store could not say) and the job must stop.
func (l *JobLease) Renew(ctx context.Context) error {
	ok, err := l.store.AcquireLease(ctx, l.Name, l.owner, l.ttl)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("lease %s lost", l.Name)
	}
	return nil
}

// Release gives the lease up so another process may take the job at once.
// It runs even when ctx is already cancelled (a job stopped by shutdown),
// bounded by five seconds.
func (l *JobLease) Release(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return l.store.ReleaseLease(rctx, l.Name, l.owner)
}
