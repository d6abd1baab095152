package secretsync

import (
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Every retry of the copy path backs off: no state a tenant can hold a copy in (a finalizer, an
// immutable copy, a webhook or ValidatingAdmissionPolicy that refuses, a quota) turns into a
// loop of writes. Two memories do it:
//   - per target (a copy's kind and place): a write that failed is not sent again, the same, until
//     its backoff has passed (RetryBase doubling per failure up to RetryCap), or RejectedRecheck
//     for a copy the API server refused as such (writeError.rejected); a copy held Terminating is
//     looked at again on the same schedule, with no write at all;
//   - per request (a SecretSync pass, a CopyRequest): a retry after a stale cache (a conflict,
//     NotFound, AlreadyExists) waits RetryBase, then twice as long each time in a row, up to
//     RetryCap. Not an error returned to the work queue's rate limiter: a stale cache is the
//     ordinary state of a busy cluster, and every returned error is a "Reconciler error" log
//     line and a count in controller_runtime_reconcile_errors_total, which the chart's
//     PlatformOperatorsReconcileErrors alert watches.
//
// One write per target is in flight at a time (oneWriter), so the check of the first memory and
// the write it allows are one step even when two passes reach the target together.
//
// Every RequeueAfter of the package comes from requeue, which never returns less than
// minRequeue (TestEveryRequeueOfTheCopyPathGoesThroughRequeue).

// DefaultRetryBase is the default first wait of a retry (Reconciler.RetryBase).
const DefaultRetryBase = time.Second

// DefaultRetryCap is the default longest wait of a retry (Reconciler.RetryCap).
const DefaultRetryCap = 5 * time.Minute

// minRequeue is the shortest RequeueAfter the package returns.
const minRequeue = 500 * time.Millisecond

// requeue is the only way the copy path asks to be called again: after d, and never sooner than
// minRequeue. Zero means no requeue.
func requeue(d time.Duration) ctrl.Result {
	if d <= 0 {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: max(d, minRequeue)}
}

// backoffDelay is the wait after the n-th failure in a row (n ≥ 1): base doubled n-1 times,
// at most limit.
func backoffDelay(n int, base, limit time.Duration) time.Duration {
	if base <= 0 {
		base = DefaultRetryBase
	}
	if limit < base {
		limit = max(base, DefaultRetryCap)
	}
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// backoff counts, per key, the retries in a row and says how long the next one waits. It is
// safe for concurrent use; forget a key when it succeeds.
type backoff struct {
	mu sync.Mutex
	// store: about 100 bytes per request retrying in a row, forgotten on success; paid by whoever
	// makes a write fail (a tenant's webhook or quota), one per target or CopyRequest.
	failures map[any]int
}

// next records one more retry of key and returns how long it waits (see backoffDelay).
func (b *backoff) next(key any, base, limit time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures == nil {
		b.failures = map[any]int{}
	}
	b.failures[key]++
	return backoffDelay(b.failures[key], base, limit)
}

// forget ends the retries of key.
func (b *backoff) forget(key any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failures, key)
}

// oneWriter lets one write per target be in flight at a time. Two passes can write the same
// target at once (a SecretSync's whole pass and its pass of one namespace); without it both
// would find the target's backoff over and both send the write that failed, doubling every
// retry of a copy a webhook or a quota refuses.
type oneWriter struct {
	mu sync.Mutex
	// store: about 100 bytes per target being written, removed when its last writer is done,
	// so at most one per write in flight; paid by the passes that write.
	held map[ownedTarget]*heldTarget
}

type heldTarget struct {
	sync.Mutex
	waiting int
}

// lock waits until no other write to tk is in flight; call the function it returns when done.
func (o *oneWriter) lock(tk ownedTarget) (unlock func()) {
	o.mu.Lock()
	if o.held == nil {
		o.held = map[ownedTarget]*heldTarget{}
	}
	h := o.held[tk]
	if h == nil {
		h = &heldTarget{}
		o.held[tk] = h
	}
	h.waiting++
	o.mu.Unlock()
	h.Lock()
	return func() {
		h.Unlock()
		o.mu.Lock()
		if h.waiting--; h.waiting == 0 {
			delete(o.held, tk)
		}
		o.mu.Unlock()
	}
}
