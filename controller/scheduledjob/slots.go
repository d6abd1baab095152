package scheduledjob

// The slot protocol: how a slot (or a run-now token) becomes at most one Job, across passes,
// conflicts, restarts and leader changes. It has four steps, and this file owns all of them;
// decide (plan.go) computes what each pass does from the object, its Jobs and the clock, and
// carryOut applies it in this order:
//
//  1. Claim and create. A slot's Job is named after it (<name>-<unix minutes>, run-now:
//     <name>-r<token hash>), so creating it is the claim: a second create of the same slot gets
//     AlreadyExists, and the Job is adopted if this ScheduledJob controls it.
//  2. Record. status.lastScheduleTime (lastRunNowToken) says the slot is taken. The pass that
//     created the Job leaves the record to the next pass, which the Job's watch event starts
//     within milliseconds and which finds the Job by its name (one write per ScheduledJob on
//     the way to the last Job of a busy slot). Every status write has an optimistic lock, so a
//     pass that read a stale ScheduledJob cannot record (or announce) a slot twice. A slot has
//     one outcome, final once written: a Job (lastScheduleTime) or a skip (lastSkippedTime);
//     decide's slot step (dueSlots.handled) never runs a skipped slot, except one whose Job the
//     API server refused, after an edit of the template.
//  3. Prune. A finished Job beyond the history limits is deleted only when the status this
//     pass read, i.e. one already written, records its claim and no longer lists it as active;
//     and only after this pass's own status write succeeded. So whenever a slot's Job is gone,
//     a written status says the slot was taken: no process, however it died, and no leader,
//     however stale its first read, finds a slot with neither a Job nor a record and runs it
//     again. Deleting a Job in the pass that records it was the window in which 5 of 600
//     slots ran twice under `kill -9`.
//     One more guard for a new process: before its first create for a ScheduledJob it reads
//     the object from the API server, and waits for its cache if that is behind. Informers are
//     separate streams: a new leader's Job cache may already miss a pruned Job while its
//     ScheduledJob cache does not yet show the status that recorded the slot. Within one
//     process the cache only moves forward, so one check per object suffices.
//  4. Observe. A Job that the last status lists as active and that is gone is reported
//     (MissingJob) only if this process did not delete it itself (concurrencyPolicy Replace).
//
// A Job that finished and was deleted (a ttlSecondsAfterFinished of 0 on a Job that ends within
// milliseconds) before its slot was recorded is still the slot's Job: the reconciler passes it to
// decide as the informer last saw it (jobs.Gone, goneChildren). One deleted before it finished, or
// while no replica watched, cannot be told from a slot never run; upstream's CronJob has the same
// limit.

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// claimRecorded reports whether the written status st records the claim of Job j: its slot is
// at or before lastScheduleTime, or its run-now token was recorded or is no longer asked for.
// A Job whose claim is not recorded must not be deleted: it is the only trace of its slot.
func claimRecorded(st *v1alpha1.ScheduledJobStatus, requestedToken string, j *batchv1.Job) bool {
	if token, ok := j.Annotations[keys.AnnotationRunNowToken]; ok {
		return token == st.LastRunNowToken || token != requestedToken
	}
	slot, err := time.Parse(time.RFC3339, j.Annotations[jobs.ScheduledTimeAnnotation])
	if err != nil {
		// Not a slot Job of ours (the annotation was edited away): nothing to protect.
		return true
	}
	return st.LastScheduleTime != nil && !slot.After(st.LastScheduleTime.Time)
}

// historyToPrune returns the finished Jobs beyond the history limits that the written status of
// sj no longer needs: their claim is recorded and they are not listed as active.
func historyToPrune(sj *v1alpha1.ScheduledJob, succeeded, failed []*batchv1.Job) []*batchv1.Job {
	candidates := append(oldest(succeeded, ptr.Deref(sj.Spec.SuccessfulJobsHistoryLimit, 3)), oldest(failed, ptr.Deref(sj.Spec.FailedJobsHistoryLimit, 1))...)
	token := sj.Annotations[keys.AnnotationRunNow]
	var out []*batchv1.Job
	for _, j := range candidates {
		if wasActive(sj, j.UID) || !claimRecorded(&sj.Status, token, j) ||
			(runHistoryLimit(sj) > 0 && !runRecordedDone(sj.Status.Runs, j, runHistoryLimit(sj))) {
			continue // the next pass, started by this pass's status write, prunes it
		}
		out = append(out, j)
	}
	return out
}

// deletions remembers the active Jobs this process deleted (concurrencyPolicy Replace), so a
// pass whose status still lists one does not report it missing. Entries expire after an hour.
type deletions struct {
	mu   sync.Mutex
	uids map[types.UID]time.Time
}

func (d *deletions) add(uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.uids == nil {
		d.uids = map[types.UID]time.Time{}
	}
	for u, at := range d.uids {
		if now.Sub(at) > time.Hour {
			delete(d.uids, u)
		}
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

// confirmations remembers, per ScheduledJob (by name: a resourceVersion is never reused, so a
// recreated object does not match its predecessor's; deleted ones are forgotten), the resourceVersion this process last saw
// the API server have: read around the cache, or returned by its own status write (slots.go,
// step 3).
type confirmations struct{ versions sync.Map }

// current reports whether the cached sj is the version the API server has. A cached version this
// process confirmed or wrote itself needs no read: after the first confirmation the cache keeps
// up, so a slot's pass costs no GET. Any other version is read once around the cache: the cache
// may not yet show this process's own last status write (a slot recorded as skipped, then a pass
// woken by the active Job's end reading the status from before: under Forbid it ran the slot it
// had reported skipped; `make chaos`, leader-frozen), or another process's record.
func (c *confirmations) current(ctx context.Context, api client.Reader, sj *v1alpha1.ScheduledJob) (bool, error) {
	if v, ok := c.versions.Load(client.ObjectKeyFromObject(sj)); ok && v == sj.ResourceVersion {
		return true, nil
	}
	var live v1alpha1.ScheduledJob
	if err := api.Get(ctx, client.ObjectKeyFromObject(sj), &live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if live.ResourceVersion != sj.ResourceVersion {
		return false, nil
	}
	c.versions.Store(client.ObjectKeyFromObject(sj), sj.ResourceVersion)
	return true, nil
}

// wrote records the version this process's own write left: the cache is current once it shows it.
func (c *confirmations) wrote(sj *v1alpha1.ScheduledJob) {
	c.versions.Store(client.ObjectKeyFromObject(sj), sj.ResourceVersion)
}

// forget drops a deleted ScheduledJob.
func (c *confirmations) forget(key client.ObjectKey) { c.versions.Delete(key) }

// carryOut applies plan p to sj in the protocol's order: replace, create (the claim), status
// write (the record, with an optimistic lock), prune, then Events.
func (r *Reconciler) carryOut(ctx context.Context, sj *v1alpha1.ScheduledJob, p *plan) (ctrl.Result, error) {
	st := &p.status
	// A failing create still lets the status write happen; its error is returned afterwards so
	// the request backs off.
	var actErr error
	slotCreated := false
	for _, j := range p.replace {
		if err := r.deleteJob(ctx, j); err != nil {
			p.events = append(p.events, event{corev1.EventTypeWarning, "FailedDelete", fmt.Sprintf("Deleting job %s: %v", j.Name, err)})
			actErr = err
			break
		}
		r.deleted.add(j.UID, r.Clock.Now())
		removeActive(st, j)
		p.events = append(p.events, event{corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job " + j.Name})
	}
	for _, c := range p.creates {
		if actErr != nil {
			break
		}
		job, ev, err := r.createJob(ctx, sj, c.job)
		if ev.reason != "" {
			p.events = append(p.events, ev)
		}
		if ev.reason == ReasonJobRejected {
			rejected(sj, p, c, ev.note)
			continue
		}
		if err != nil {
			actErr = err
			break
		}
		if job == nil {
			continue
		}
		if _, known := findRef(st.Active, job.UID); !known {
			if finished, _, _ := jobs.Finished(job); !finished {
				st.Active = append(st.Active, jobRef(job))
			}
		}
		if ev.reason == ReasonSuccessfulCreate && jobRejected(sj) {
			// The template works again (or what refused it changed).
			setReady(sj, st, metav1.ConditionTrue, ReasonScheduled, p.scheduled)
		}
		if c.slot != nil {
			st.LastScheduleTime = &metav1.Time{Time: *c.slot}
			if ev.reason == ReasonSuccessfulCreate {
				slotCreated = true
				r.Metrics.CreationSkew.Observe(r.Clock.Since(*c.slot).Seconds())
			}
		} else {
			st.LastRunNowToken = c.token
		}
	}
	if actErr == nil && slotCreated && len(p.replace) == 0 && st.LastRunNowToken == sj.Status.LastRunNowToken && !jobRejected(sj) {
		// Step 2: the slot's Job is the only thing this pass did; the next pass records it.
		// The backstop requeue covers a lost watch event.
		for _, e := range p.events {
			switch e.reason {
			case ReasonTooManyMissedTimes, ReasonMissedSlots:
				r.Recorder.Eventf(sj, nil, e.kind, e.reason, "Schedule", "%s", e.note)
				r.Metrics.SkippedSlots.WithLabelValues(e.reason).Inc()
			case ReasonSuspended: // the slots passed over while suspended (runDueSlot)
				r.Recorder.Eventf(sj, nil, e.kind, e.reason, "Schedule", "%s", e.note)
			}
		}
		r.Objects.observe(sj, st, p.interval) // the record is the next pass's; the run has started
		// The slot's priority is spent: the backstop waits behind other ScheduledJobs' slots.
		return ctrl.Result{RequeueAfter: StatusBackstop, Priority: ptr.To(0)}, nil
	}
	// What follows can wait: at a slot shared by many ScheduledJobs, the passes that record
	// slots run while the last Jobs are still being created; let those creates go first.
	// Never write when nothing changed: most reconciles (a Job's pod moving) change no status.
	statusChanged := !equality.Semantic.DeepEqual(sj.Status, *st)
	if len(p.prune) > 0 || statusChanged {
		r.writes().Wait(ctx, maxWriteHold)
	}
	if statusChanged {
		before := sj.DeepCopy()
		sj.Status = *st
		// Optimistic lock: a pass that read the ScheduledJob from a cache not yet showing this
		// controller's last status write would record (and announce) the same slot again. Its
		// write conflicts instead, its Events and prunes are dropped, and the next pass sees
		// the new status.
		if err := r.Client.Status().Patch(ctx, sj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) {
				return ctrl.Result{}, nil
			}
			if apierrors.IsConflict(err) {
				// Normal: the watch event of the newer version starts the next pass.
				return ctrl.Result{RequeueAfter: conflictRequeue}, nil
			}
			return ctrl.Result{}, err
		}
		r.confirmed.wrote(sj) // the Patch left the new resourceVersion in sj
	}
	r.Objects.observe(sj, st, p.interval)
	// Step 3, after the write: p.prune holds only Jobs the status read at the start of the
	// pass no longer needs.
	for _, j := range p.prune {
		// Its run is in the written status: jobs.Gone need not remember it (and must not fill
		// with the manager's own prunes).
		r.gone.Deleting(j.UID)
		if err := r.deleteJob(ctx, j); err != nil {
			p.events = append(p.events, event{corev1.EventTypeWarning, "FailedDelete", fmt.Sprintf("Deleting job %s: %v", j.Name, err)})
			continue
		}
		p.events = append(p.events, event{corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job " + j.Name})
	}
	for _, e := range p.events {
		r.Recorder.Eventf(sj, nil, e.kind, e.reason, "Schedule", "%s", e.note)
		if e.reason == ReasonTooManyMissedTimes || e.reason == ReasonMissedSlots {
			r.Metrics.SkippedSlots.WithLabelValues(e.reason).Inc() // one per Event: slots passed over
		}
	}
	for _, result := range p.finished {
		r.Metrics.FinishedRuns.WithLabelValues(result).Inc()
	}
	if p.skipped != "" {
		r.Metrics.SkippedSlots.WithLabelValues(p.skipped).Inc()
		log := ctrl.LoggerFrom(ctx).WithValues("reason", p.skipped)
		if st.LastSkippedTime != nil {
			log = log.WithValues("slot", st.LastSkippedTime.UTC())
		}
		log.Info("Skipped a slot")
	}
	if actErr != nil {
		return ctrl.Result{}, actErr
	}
	res := ctrl.Result{RequeueAfter: p.requeueAfter}
	if p.podsCheck > 0 && (res.RequeueAfter == 0 || p.podsCheck < res.RequeueAfter) {
		// An active Job with no pod is looked at again when it would count as stuck.
		res.RequeueAfter = p.podsCheck
	}
	if !p.due.IsZero() {
		// At a shared slot the queue serves every namespace's first ScheduledJob before any
		// namespace's second (fairness.go).
		res.Priority = ptr.To(r.fair.priority(sj.Namespace, sj.Name, p.due, r.Clock.Now()))
	}
	return res, nil
}

// rejected records a Job the API server refused as invalid (the template is wrong): the slot
// is skipped (it is not retried; the next slot tries again), a run-now token is spent, and
// Ready says why until the spec changes or a later create succeeds.
func rejected(sj *v1alpha1.ScheduledJob, p *plan, c creation, msg string) {
	st := &p.status
	if c.slot != nil {
		st.LastSkippedTime = &metav1.Time{Time: *c.slot}
		p.skipped = ReasonJobRejected
	} else {
		st.LastRunNowToken = c.token
	}
	setReady(sj, st, metav1.ConditionFalse, ReasonJobRejected, msg)
}

// slotJobExists reports whether sj's Job for slot is among its children: named as SlotName
// names it, or as it was named up to 0.1.0 (a slot created just before an upgrade and recorded
// after it must not run again under its new name).
func slotJobExists(children []*batchv1.Job, sj *v1alpha1.ScheduledJob, slot time.Time) bool {
	return hasJobNamed(children, jobs.SlotName(sj, slot)) || hasJobNamed(children, jobs.LegacySlotName(sj.Name, slot))
}
