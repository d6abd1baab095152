package scheduledjob

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

// deletions remembers the active Jobs this process deleted (concurrencyPolicy Replace), so a
// pass whose status still lists one does not report it missing. Entries expire after an hour
// (swept at most once a minute, so a slot that replaces many Jobs does not walk the whole memory
// for each).
type deletions struct {
	mu sync.Mutex
	// store: one entry per Job replaced in the last hour and a minute (Replace: at most a slot and
	// a run-now a minute per ScheduledJob), about 100 bytes each; paid by the tenants whose
	// ScheduledJobs use Replace.
	uids  map[types.UID]time.Time
	swept time.Time
}

func (d *deletions) add(uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.uids == nil {
		d.uids = map[types.UID]time.Time{}
	}
	if now.Sub(d.swept) >= time.Minute {
		maps.DeleteFunc(d.uids, func(_ types.UID, at time.Time) bool { return now.Sub(at) > time.Hour })
		d.swept = now
	}
	d.uids[uid] = now
}

// has is a snapshot check, safe to hand to decide (which stays pure).
func (d *deletions) has(uid types.UID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.uids[uid]
	return ok
}

// carryOut applies plan p to sj in the protocol's order: replace, create (the claim), status
// write (the record, with an optimistic lock), prune, then Events and metrics, which say only
// what a written status records.
func (r *Reconciler) carryOut(ctx context.Context, sj *v1alpha1.ScheduledJob, p *slotplan.Plan) (ctrl.Result, error) {
	st := &p.Status
	// A failing delete or create still lets the status write happen; its error is returned
	// afterwards so the request backs off.
	var actErr error
	for _, j := range p.Replace {
		ev, err := r.deleteJob(ctx, j)
		p.Events = append(p.Events, ev)
		if err != nil {
			actErr = err
			break
		}
		r.deleted.add(j.UID, r.Clock.Now())
		st.Active = slices.DeleteFunc(st.Active, func(a corev1.ObjectReference) bool { return a.UID == j.UID })
		st.ActiveCount = max(st.ActiveCount-1, int32(len(st.Active)))
	}
	// Step 1, the claims, only once every replaced Job is gone (Replace never runs two at
	// once). The loop changes no status: slotplan.RecordCreates records the answers.
	var results []slotplan.CreateResult
	for _, c := range p.Creates {
		if actErr != nil {
			break
		}
		job, ev, err := r.createJob(ctx, sj, c.Job)
		if err != nil {
			// Not an answer about the Job (a timeout, the API server or a webhook unavailable):
			// the slot is not decided; the request backs off and a later pass tries again.
			if ev.Reason != "" {
				p.Events = append(p.Events, ev)
			}
			actErr = err
			break
		}
		results = append(results, slotplan.CreateResult{Creation: c, Got: job, Ev: ev})
		if c.Slot != nil && ev.Reason == slotplan.ReasonSuccessfulCreate {
			r.Metrics.CreationSkew.Observe(r.Clock.Since(*c.Slot).Seconds())
		}
	}
	slotplan.RecordCreates(sj, p, results, r.Clock.Now())
	if actErr == nil && slotplan.OnlyRecordsSlotJobs(sj, p) {
		r.Objects.observe(sj, st, p.Interval) // the run has started
		// Step 2: the slot's Job is all this pass did; the next pass, which the Job's watch event
		// starts within milliseconds, records it from the Job with the same status and Event, so
		// this one writes nothing. The backstop covers a lost watch event, behind other slots.
		return ctrl.Result{RequeueAfter: StatusBackstop, Priority: ptr.To(0)}, nil
	}
	// What follows can wait: at a slot shared by many ScheduledJobs, the passes that record
	// slots run while the last Jobs are still being created; let those creates go first.
	// Never write when nothing changed: most reconciles (a Job's pod moving) change no status.
	statusChanged := !equality.Semantic.DeepEqual(sj.Status, *st)
	if len(p.Prune) > 0 || statusChanged {
		r.writes().Wait(ctx, maxWriteHold)
	}
	if statusChanged {
		// The optimistic lock: a pass that read a cache not yet showing this controller's last
		// status write would record (and announce) the same slot again; its write conflicts
		// instead, its Events and prunes are dropped, and the next pass sees the new status.
		before := sj.DeepCopy()
		sj.Status = *st
		if res, done, err := jobs.WriteStatus(ctx, r.Client, &r.confirmed, sj, before, func(o *v1alpha1.ScheduledJob) v1alpha1.ScheduledJobStatus { return o.Status }); done {
			return res, err
		}
	}
	r.Objects.observe(sj, st, p.Interval)
	// Step 3, after the write: p.prune holds only Jobs the status read at the start of the
	// pass no longer needs.
	for _, j := range p.Prune {
		// Its run is in the written status: jobs.Gone need not remember it (and must not fill
		// with the manager's own prunes).
		r.gone.Deleting(j.UID)
		ev, _ := r.deleteJob(ctx, j) // a failed prune is tried again by the next pass
		p.Events = append(p.Events, ev)
	}
	for _, e := range p.Events {
		r.Recorder.Eventf(sj, nil, e.Kind, e.Reason, "Schedule", "%s", e.Note)
	}
	for _, reason := range p.PassedOver {
		r.Metrics.SkippedSlots.WithLabelValues(reason).Inc() // one per Event: slots passed over
	}
	for _, result := range p.Finished {
		r.Metrics.FinishedRuns.WithLabelValues(result).Inc()
	}
	if p.Skipped != "" {
		r.Metrics.SkippedSlots.WithLabelValues(p.Skipped).Inc()
		log := ctrl.LoggerFrom(ctx).WithValues("reason", p.Skipped)
		if st.LastSkippedTime != nil {
			log = log.WithValues("slot", st.LastSkippedTime.UTC())
		}
		log.Info("Skipped a slot")
	}
	if actErr != nil {
		return ctrl.Result{}, actErr
	}
	res := ctrl.Result{RequeueAfter: p.RequeueAfter}
	if p.PodsCheck > 0 && (res.RequeueAfter == 0 || p.PodsCheck < res.RequeueAfter) {
		res.RequeueAfter = p.PodsCheck
	}
	if !p.Due.IsZero() {
		// Before watch events; among the passes due, the queue (controller/fairqueue) takes
		// namespaces in turn, so at a shared slot every namespace's first ScheduledJob goes
		// before any namespace's second.
		res.Priority = ptr.To(slotPriority)
	}
	return res, nil
}

// slotPriority is the work-queue priority of a pass due at a slot: above watch events' (0), so
// that at a shared slot the creates go before the passes that only record status.
const slotPriority = 1 << 20
