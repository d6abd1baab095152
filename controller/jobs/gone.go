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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// GoneRetention is how long Gone remembers a finished Job after its deletion.
const GoneRetention = time.Hour

// goneCap bounds how many Jobs Gone remembers; the oldest go first.
const goneCap = 10000

// Gone remembers how the manager's Jobs that were deleted after they finished ended, as the Job
// informer last saw them. A Job with a short ttlSecondsAfterFinished can complete and be deleted
// before a worker looks at its owner; without this, the owner would find it missing and report a
// success as a deletion (At Failed/JobDeleted, run history Deleted).
//
// It is memory only. What it cannot know: a Job that finished and was deleted while no replica
// of the manager was watching (all stopped, or a watch gap in which the informer never saw the
// Job's final status) is, to its owner, a Job deleted before it finished. Replicas that are not
// the leader record too (see Register), so a failover loses nothing the standby saw.
type Gone struct {
	kind  string
	clock clock.PassiveClock

	mu   sync.Mutex
	jobs map[types.UID]goneJob
}

type goneJob struct {
	job *batchv1.Job
	at  time.Time
}

// NewGone remembers the deleted finished Jobs controlled by an object of ownerKind (At,
// ScheduledJob).
func NewGone(ownerKind string, c clock.PassiveClock) *Gone {
	return &Gone{kind: ownerKind, clock: c, jobs: map[types.UID]goneJob{}}
}

// Observe records obj, a Job the informer saw deleted, if it had finished and its controller is
// of the kind g remembers. Only what the owners read is kept (name, UID, owner, the run's
// annotations, status), so the memory is a few hundred bytes per Job whatever its template.
func (g *Gone) Observe(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(j)
	if ref == nil || ref.Kind != g.kind {
		return
	}
	if finished, _, _ := Finished(j); !finished {
		return
	}
	kept := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: j.Name, Namespace: j.Namespace, UID: j.UID, CreationTimestamp: j.CreationTimestamp,
			OwnerReferences: []metav1.OwnerReference{*ref}, Annotations: map[string]string{},
		},
		Status: *j.Status.DeepCopy(),
	}
	for k, v := range j.Annotations {
		if k == ScheduledTimeAnnotation || k == keys.AnnotationRunNowToken {
			kept.Annotations[k] = v
		}
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire(now)
	if len(g.jobs) >= goneCap {
		var oldest types.UID
		for uid, e := range g.jobs {
			if oldest == "" || e.at.Before(g.jobs[oldest].at) {
				oldest = uid
			}
		}
		delete(g.jobs, oldest)
	}
	g.jobs[j.UID] = goneJob{job: kept, at: now}
}

// Of returns copies of the remembered Jobs controlled by owner.
func (g *Gone) Of(owner types.UID) []*batchv1.Job {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire(g.clock.Now())
	var out []*batchv1.Job
	for _, e := range g.jobs {
		if e.job.OwnerReferences[0].UID == owner {
			out = append(out, e.job.DeepCopy())
		}
	}
	return out
}

func (g *Gone) expire(now time.Time) {
	for uid, e := range g.jobs {
		if now.Sub(e.at) > GoneRetention {
			delete(g.jobs, uid)
		}
	}
}

// Register records every Job deletion the informer of the manager's Job cache sees. The cache
// runs on every replica from the start, before the leader election, so a standby knows the Jobs
// that finished and went while it waited.
func (g *Gone) Register(ctx context.Context, informers cache.Informers) error {
	inf, err := informers.GetInformer(ctx, &batchv1.Job{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: g.Observe})
	return err
}

// RecordingDeletes wraps the handler that enqueues a Job's owner: a deletion is recorded in g
// before the owner is enqueued, so the pass the deletion starts finds it.
func RecordingDeletes(g *Gone, next handler.EventHandler) handler.EventHandler {
	return recordingDeletes{EventHandler: next, gone: g}
}

type recordingDeletes struct {
	handler.EventHandler
	gone *Gone
}

func (h recordingDeletes) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.gone.Observe(e.Object)
	h.EventHandler.Delete(ctx, e, q)
}
