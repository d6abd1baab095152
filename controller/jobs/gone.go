package jobs

import (
	"context"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/platform-operators/platform-operators/controller/fairqueue"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// GoneRetention is how long Gone remembers a finished Job after its deletion.
const GoneRetention = time.Hour

// goneCap bounds how many Jobs Gone remembers; the oldest go first. Gone keeps none of the
// manager's own prunes: the cap is reached only when others delete that many within GoneRetention.
const goneCap = 10000

// Gone remembers how the manager's Jobs that others deleted after they finished ended, as the
// Job informer last saw them. A Job with a short ttlSecondsAfterFinished can complete and be
// deleted before a worker looks at its owner; without this, the owner would report a success as
// a deletion, or run a ScheduledJob slot not yet recorded again. The manager's own prunes are not
// remembered: the owner's status already says how those runs ended. It is memory only: a Job that
// finished and was deleted while no replica watched is, to its owner, one deleted unfinished.
type Gone struct {
	kind  string
	clock clock.PassiveClock
	// limit is goneCap (a field so that tests can make it small).
	limit int

	mu sync.Mutex
	// byOwner indexes the remembered Jobs by their controller's UID, then their own.
	// store: at most limit (goneCap) Jobs in their trimmed form (jobs.Trim: about 2 KiB each)
	// bytes, oldest dropped first; paid by the tenants whose Jobs finish and go.
	byOwner map[types.UID]map[types.UID]goneJob
	// order is every remembered Job, oldest first; oursOrder the same for ours. Each is first in,
	// first out: popped by moving the slice on (its append reallocates as it fills, freeing the
	// popped front), so Observe, Deleting and expiry stay O(1) amortized.
	order, oursOrder []entry
	// count is how many Jobs byOwner holds.
	count int
	// ours are the finished Jobs the manager is deleting itself, until the informer sees them go.
	// store: at most limit entries of about 100 bytes (a UID and a time); paid by the manager's
	// own prunes.
	ours map[types.UID]time.Time
}

type goneJob struct {
	job *batchv1.Job
	at  time.Time
}

// NewGone remembers the deleted finished Jobs controlled by an object of ownerKind (At,
// ScheduledJob).
func NewGone(ownerKind string, c clock.PassiveClock) *Gone {
	return &Gone{kind: ownerKind, clock: c, limit: goneCap, byOwner: map[types.UID]map[types.UID]goneJob{}, ours: map[types.UID]time.Time{}}
}

// Deleting says the manager itself is about to delete the finished Job uid (history beyond the
// limits, pruned only once its owner's written status records its run): its deletion is not
// remembered. A nil Gone does nothing.
func (g *Gone) Deleting(uid types.UID) {
	if g == nil {
		return
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire(now)
	if _, ok := g.ours[uid]; !ok && len(g.ours) >= g.limit {
		g.evictOldest(true)
	}
	g.ours[uid] = now
	g.oursOrder = append(g.oursOrder, entry{uid: uid, at: now, ours: true})
}

// Observe records obj, a Job the informer saw deleted, if it had finished, its controller is of
// the kind g remembers, and the manager did not delete it itself. It keeps what the Job cache
// keeps (Trim): what the owners read, a few hundred bytes per Job whatever its template.
func (g *Gone) Observe(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(j)
	if finished, _, _ := jobstate.Finished(j); ref == nil || ref.Kind != g.kind || !finished {
		return
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire(now)
	if _, pruned := g.ours[j.UID]; pruned {
		delete(g.ours, j.UID) // the manager's own prune: nothing to remember
		// Pop the entries that no longer refer to anything, so the list stays as long as what it
		// orders, not as the deletions seen.
		for len(g.oursOrder) > 0 && !g.current(g.oursOrder[0]) {
			g.oursOrder = g.oursOrder[1:]
		}
		return
	}
	trimmed, _ := Trim(j.DeepCopy())
	kept := trimmed.(*batchv1.Job)
	jobs := g.byOwner[ref.UID]
	if jobs == nil {
		jobs = map[types.UID]goneJob{}
		g.byOwner[ref.UID] = jobs
	}
	if _, again := jobs[j.UID]; !again {
		if g.count >= g.limit {
			g.evictOldest(false)
		}
		g.count++
	}
	jobs[j.UID] = goneJob{job: kept, at: now}
	g.order = append(g.order, entry{uid: j.UID, owner: ref.UID, at: now})
}

// Of returns copies of the remembered Jobs controlled by owner. A nil Gone has none.
func (g *Gone) Of(owner types.UID) []*batchv1.Job {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire(g.clock.Now())
	var out []*batchv1.Job
	for _, e := range g.byOwner[owner] {
		out = append(out, e.job.DeepCopy())
	}
	return out
}

// oursRetention is how long a deletion by the manager itself waits for the informer to see it
// (seconds, normally); a delete that failed is forgotten then.
const oursRetention = 5 * time.Minute

// expire drops what is older than its retention, from the front of the time-ordered lists.
func (g *Gone) expire(now time.Time) {
	for f, retention := range map[*[]entry]time.Duration{&g.order: GoneRetention, &g.oursOrder: oursRetention} {
		for len(*f) > 0 && now.Sub((*f)[0].at) > retention {
			g.drop((*f)[0])
			*f = (*f)[1:]
		}
	}
}

// evictOldest drops the oldest remembered Job (ours false) or the oldest of the manager's own
// deletions (ours true), and whatever stale entries come before it.
func (g *Gone) evictOldest(ours bool) {
	f := &g.order
	if ours {
		f = &g.oursOrder
	}
	for len(*f) > 0 {
		e := (*f)[0]
		if *f = (*f)[1:]; g.drop(e) {
			return
		}
	}
}

// drop removes what e refers to if it is still current (not replaced by a later entry for the
// same Job) and reports whether it did.
func (g *Gone) drop(e entry) bool {
	switch {
	case !g.current(e):
		return false
	case e.ours:
		delete(g.ours, e.uid)
	default:
		delete(g.byOwner[e.owner], e.uid)
		if len(g.byOwner[e.owner]) == 0 {
			delete(g.byOwner, e.owner)
		}
		g.count--
	}
	return true
}

// current reports whether e still refers to what g remembers.
func (g *Gone) current(e entry) bool {
	if e.ours {
		at, ok := g.ours[e.uid]
		return ok && at.Equal(e.at)
	}
	cur, ok := g.byOwner[e.owner][e.uid]
	return ok && cur.at.Equal(e.at)
}

// entry is one remembered Job (or one of the manager's own deletions) in time order.
type entry struct {
	uid, owner types.UID
	at         time.Time
	ours       bool
}

// recordingDeletes wraps the handler that enqueues a Job's owner: a deletion is recorded in gone
// before the owner is enqueued, so the pass the deletion starts finds it.
type recordingDeletes struct {
	handler.EventHandler
	gone *Gone
}

func (h recordingDeletes) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.gone.Observe(e.Object)
	h.EventHandler.Delete(ctx, e, q)
}

// Setup registers the controller name of the Jobs' owners (an At or a ScheduledJob, of kind),
// watched with their Jobs and served by workers (at least 1) from the fair queue. The Job field
// index must already be registered.
func Setup(mgr ctrl.Manager, name, kind string, owner client.Object, workers int, clock clock.PassiveClock, r reconcile.Reconciler) (*Gone, error) {
	gone, err := WatchGone(mgr.GetCache(), kind, clock)
	if err != nil {
		return nil, err
	}
	byOwner := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), owner, handler.OnlyControllerOwner())
	return gone, ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(owner).
		Watches(&batchv1.Job{}, recordingDeletes{EventHandler: byOwner, gone: gone}).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1), NewQueue: fairqueue.NewQueue}).
		Complete(r)
}

// WatchGone starts remembering the deleted Jobs of kind's owners from the Job informer of
// informers (the manager's cache). The cache runs on every replica from the start, before the
// leader election, so a standby knows the Jobs that finished and went while it waited.
func WatchGone(informers cache.Informers, kind string, clock clock.PassiveClock) (*Gone, error) {
	gone := NewGone(kind, clock)
	inf, err := informers.GetInformer(context.Background(), &batchv1.Job{})
	if err != nil {
		return gone, err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: gone.Observe})
	return gone, err
}
