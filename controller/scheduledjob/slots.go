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
//     within milliseconds and whose record step (recordClaims) finds the Job by its name, for
//     any slot and whatever else that pass finds (past the deadline, the next slot due,
//     suspended); one write per ScheduledJob on the way to the last Job of a busy slot. Every
//     status write has an optimistic lock, so a pass that read a stale ScheduledJob cannot
//     record (or announce) a slot twice. A slot has one outcome, final once written (the state
//     machine below); decide's slot step (dueSlots.handled) never runs a slot decided otherwise,
//     except one whose Job the API server refused: at admission (403), tried again while the
//     slot can start (retryRefused); any refusal, after an edit of the spec. Under Forbid and
//     Replace, a pass that creates first reads around the cache the Jobs of recent slots that
//     are not recorded (unconfirmedSlots): the Job the previous pass created must block (or be
//     replaced) even while the Job cache does not show it.
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
// The state machine of one slot. A slot is due (its time, plus the object's jitter, has come and
// the status does not record it: after lastScheduleTime, not lastSkippedTime) until one pass
// decides it; each outcome is written by the pass named, in that pass's one status write, or is
// reconstructed exactly from the Job that exists (a Job's name is its slot):
//
//	due ──create succeeds──────────▶ created   recorded by the next pass from the Job (record
//	 │                                          step), or by this pass if it writes status anyway
//	 ├──create refused (403/422/400)▶ refused   Failed run, reason JobRejected, the API server's
//	 │                                 │        message; Ready False; this pass (recordCreates)
//	 │                                 └─403, tried again after jobstate.RefusedBackoff before the
//	 │                                   deadline and the next slot, succeeds ▶ created (the
//	 │                                   Job's run replaces the record, the ledger drops it)
//	 ├──Forbid, a Job active────────▶ skipped   JobAlreadyActive; this pass (runDueSlot)
//	 ├──seen past its deadline──────▶ skipped   MissedDeadline; this pass (runDueSlot)
//	 ├──a later slot due too────────▶ passed    MissedSlots / TooManyMissedTimes, or Suspended if
//	 │                                 over      suspended meanwhile: named in the Event of the pass
//	 │                                           that runs the most recent slot (no run each)
//	 └──create fails otherwise──────▶ due       (a timeout, a webhook unavailable: nothing is
//	                                             decided, the pass backs off and tries again)
//
// SlotOutcomes (plan.go) lists the outcomes with their Events and metric labels. While suspended a
// slot is not looked at (no pass, no write); on resume it is passed over like a missed one, and
// the record step still records a slot whose Job was created just before the suspension.
//
// A Job that finished and was deleted by others (a ttlSecondsAfterFinished of 0 on a Job that
// ends within milliseconds) before its slot was recorded is still the slot's Job: the reconciler
// passes it to decide as the informer last saw it (jobs.Gone, goneChildren; the manager's own
// prunes are not remembered, their runs are in the status). One deleted before it finished, or
// while no replica watched, cannot be told from a slot never run; upstream's CronJob has the same
// limit.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/statuswrite"
)

// claimRecorded reports whether the written status st records the claim of Job j: its slot is
// at or before lastScheduleTime, or its run-now token was recorded or is no longer asked for.
// A Job whose claim is not recorded must not be deleted: it is the only trace of its slot.
func claimRecorded(st *v1alpha1.ScheduledJobStatus, requestedToken string, j *batchv1.Job) bool {
	if token, ok := j.Annotations[keys.AnnotationRunNowToken]; ok {
		return token == st.LastRunNowToken || token != requestedToken
	}
	slot, err := time.Parse(time.RFC3339, j.Annotations[jobstate.ScheduledTimeAnnotation])
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
	var out []*batchv1.Job
	for _, j := range candidates {
		if wasActive(sj, j.UID) || !claimRecordedOf(sj, j) ||
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
	mu sync.Mutex
	// store: one entry per Job replaced in the last hour (Replace: at most a slot and a run-now a
	// minute per ScheduledJob), about 100 bytes each; paid by the tenants whose ScheduledJobs
	// use Replace.
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

// carryOut applies plan p to sj in the protocol's order: replace, create (the claim), status
// write (the record, with an optimistic lock), prune, then Events and metrics, which say only
// what a written status records.
func (r *Reconciler) carryOut(ctx context.Context, sj *v1alpha1.ScheduledJob, p *plan) (ctrl.Result, error) {
	st := &p.status
	// A failing delete or create still lets the status write happen; its error is returned
	// afterwards so the request backs off.
	var actErr error
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
	// Step 1, the claims, only once every replaced Job is gone (Replace never runs two at
	// once). What the API server answered is recorded after the loop, by the pure
	// recordCreates: the loop itself changes no status.
	var results []createResult
	for _, c := range p.creates {
		if actErr != nil {
			break
		}
		job, ev, err := r.createJob(ctx, sj, c.job)
		if err != nil {
			// Not an answer about the Job (a timeout, the API server or a webhook unavailable):
			// the slot is not decided; the request backs off and a later pass tries again.
			if ev.reason != "" {
				p.events = append(p.events, ev)
			}
			actErr = err
			break
		}
		results = append(results, createResult{creation: c, got: job, ev: ev})
		if c.slot != nil && ev.reason == ReasonSuccessfulCreate {
			r.Metrics.CreationSkew.Observe(r.Clock.Since(*c.slot).Seconds())
		}
	}
	recordCreates(sj, p, results, r.Clock.Now())
	if actErr == nil && onlyRecordsSlotJobs(sj, p) {
		r.Objects.observe(sj, st, p.interval) // the run has started
		// Step 2: the slot's Job is the only thing this pass did; the next pass, which the Job's
		// watch event starts within milliseconds, records it from the Job (recordClaims) with
		// the same status and the same Event, so this one writes nothing. The backstop requeue
		// covers a lost watch event. The slot's priority is spent: the backstop waits behind
		// other ScheduledJobs' slots.
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
		// The optimistic lock: a pass that read the ScheduledJob from a cache not yet showing
		// this controller's last status write would record (and announce) the same slot again.
		// Its write conflicts instead, its Events and prunes are dropped, and the next pass (the
		// newer version's watch event starts it) sees the new status.
		before := sj.DeepCopy()
		sj.Status = *st
		switch answer, err := statuswrite.Patch(ctx, r.Client, sj, before, sjStatus); {
		case err != nil:
			return ctrl.Result{}, err
		case answer == statuswrite.Gone:
			return ctrl.Result{}, nil
		case answer == statuswrite.Stale:
			return ctrl.Result{RequeueAfter: jobs.Recheck}, nil
		}
		r.confirmed.Wrote(sj) // the Patch left the new resourceVersion in sj
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
	}
	for _, reason := range p.passedOver {
		r.Metrics.SkippedSlots.WithLabelValues(reason).Inc() // one per Event: slots passed over
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

func sjStatus(sj *v1alpha1.ScheduledJob) v1alpha1.ScheduledJobStatus { return sj.Status }

// createResult is the API server's answer to one create of the plan: the Job created or adopted
// (got), or none, with the Event that says so (SuccessfulCreate, JobRejected, JobNameTaken; none
// for a Job adopted after AlreadyExists).
type createResult struct {
	creation
	got *batchv1.Job
	ev  event
}

// onlyRecordsSlotJobs reports whether all this pass did is create slot Jobs, and all its status
// write would say is their record: the status planned differs from the one read only in
// lastScheduleTime, the active Jobs, nextScheduleTime and Ready's "Next run at" (the clock's), and its only Events are
// the creates'. The next pass computes exactly that from the Jobs (recordClaims) and the clock,
// so this one may leave it to it.
func onlyRecordsSlotJobs(sj *v1alpha1.ScheduledJob, p *plan) bool {
	if len(p.creates) == 0 || len(p.replace) > 0 || p.skipped != "" || len(p.passedOver) > 0 || len(p.finished) > 0 {
		return false
	}
	for _, c := range p.creates {
		if c.slot == nil {
			return false
		}
	}
	for _, e := range p.events {
		if e.reason != ReasonSuccessfulCreate {
			return false
		}
	}
	read, planned := sj.Status.DeepCopy(), p.status.DeepCopy()
	for _, st := range []*v1alpha1.ScheduledJobStatus{read, planned} {
		st.LastScheduleTime, st.Active, st.ActiveCount, st.NextScheduleTime = nil, nil, 0, nil
		if c := meta.FindStatusCondition(st.Conditions, ConditionReady); c != nil && c.Reason == ReasonScheduled {
			c.Message = "" // "Next run at ...": the clock's too
		}
	}
	return equality.Semantic.DeepEqual(read, planned)
}

// recordCreates is the record of a pass's creates, decided from the API server's answers at now
// (pure, slots.go step 2), so that the loop that creates changes no status:
//
//   - created or adopted: the Job is active; a run-now token is recorded; a slot is recorded
//     (lastScheduleTime), though carryOut leaves that write to the next pass when the slot's Job
//     is all the pass did (onlyRecordsSlotJobs); a backfill's slot moves its cursor;
//   - refused by the API server (admission: a webhook, a ValidatingAdmissionPolicy, a
//     ResourceQuota; or an invalid template): refusedRun;
//   - the name taken by a Job this ScheduledJob does not control: nothing recorded (the Event),
//     but a backfill's slot is dealt with.
func recordCreates(sj *v1alpha1.ScheduledJob, p *plan, results []createResult, now time.Time) {
	st := &p.status
	for _, res := range results {
		switch {
		case res.ev.reason == ReasonJobRejected:
			refusedRun(sj, p, res.creation, res.ev.note, now)
			if res.backfill != nil {
				recordBackfill(sj, p, res)
			}
			continue
		case res.ev.reason != "":
			p.events = append(p.events, res.ev)
		}
		if res.backfill != nil {
			recordBackfill(sj, p, res) // the name taken by a Job not ours ends the slot too
		}
		if res.got == nil {
			continue
		}
		if _, known := findRef(st.Active, res.got.UID); !known {
			if finished, _, _ := jobstate.Finished(res.got); !finished {
				st.ActiveCount++
				if len(st.Active) < maxActiveRefs {
					st.Active = append(st.Active, jobRef(res.got))
				}
			}
		}
		if res.slot != nil && res.ev.reason == ReasonSuccessfulCreate && readyReason(st) == ReasonJobRejected {
			// The template works again (or what refused it changed).
			setReady(sj, st, metav1.ConditionTrue, ReasonScheduled, p.scheduled)
		}
		switch {
		case res.backfill != nil:
		case res.slot == nil:
			st.LastRunNowToken = res.token
			st.LastRunNowTime = runNowTime(res.creation)
		case st.LastScheduleTime == nil || res.slot.After(st.LastScheduleTime.Time):
			st.LastScheduleTime = &metav1.Time{Time: *res.slot}
		}
	}
}

// refusedRun records a Job the API server refused at now: the run is Failed with reason
// JobRejected and the API server's message in status.runs (in place of a skip recorded for the
// same slot). A scheduled slot is recorded at once (lastSkippedTime and the ledger); a refusal at
// admission is tried again after jobstate.RefusedBackoff while the slot can start (refusalRetry: the
// try that creates the Job replaces the record), one as invalid only after an edit of the spec;
// the next slot tries again either way. Ready is False (JobRejected,
// naming the refusal) until a slot's create succeeds or the spec changes: Ready is about the
// schedule's runs. A run-now token is spent; a backfill's slot is dealt with (its cursor moves on):
// neither touches Ready, their Warning says it. The Warning is sent once per distinct refusal for
// the scheduled slots: the same quota refusing every slot of an every-minute schedule is one
// Warning, not one a minute.
func refusedRun(sj *v1alpha1.ScheduledJob, p *plan, c creation, msg string, now time.Time) {
	st := &p.status
	var at time.Time
	switch {
	case c.slot != nil:
		at = *c.slot
		if r := inRanges(sj.Status.NotRun, at); r == nil || r.Reason != ReasonJobRejected {
			p.skipped = ReasonJobRejected // counted once, not per try (retryRefused)
		}
		st.LastSkippedTime = &metav1.Time{Time: at}
		recordNotRun(st, p.sched, at, at, ReasonJobRejected)
		if retry, ok := refusalRetry(sj, p.sched, at, msg, now.Truncate(time.Second)); ok {
			requeueWithin(p, retry.Sub(now))
		}
	case c.backfill != nil:
		at = *c.backfill
		// Lasting (the run history keeps only its limit): consecutive refused slots are one range.
		recordNotRun(st, p.sched, at, at, ReasonJobRejected)
	default:
		st.LastRunNowToken = c.token
		st.LastRunNowTime = runNowTime(c)
		if st.LastRunNowTime != nil {
			at = st.LastRunNowTime.Time
		} else {
			at = now
		}
	}
	st.Runs = slices.DeleteFunc(st.Runs, func(r v1alpha1.ScheduledJobRun) bool { return r.JobName == "" && r.ScheduledTime.Time.Equal(at) })
	st.Runs = addRun(st.Runs, v1alpha1.ScheduledJobRun{ScheduledTime: metav1.NewTime(at), Result: v1alpha1.RunFailed,
		Reason: ReasonJobRejected, Message: runMessage(msg), CompletionTime: &metav1.Time{Time: now.Truncate(time.Second)}}, runHistoryLimit(sj))
	if c.slot == nil {
		p.events = append(p.events, event{corev1.EventTypeWarning, ReasonJobRejected, msg})
		return
	}
	old := meta.FindStatusCondition(st.Conditions, ConditionReady)
	if old == nil || old.Reason != ReasonJobRejected || refusalCause(old.Message) != refusalCause(msg) {
		p.events = append(p.events, event{corev1.EventTypeWarning, ReasonJobRejected, msg})
	}
	setReady(sj, st, metav1.ConditionFalse, ReasonJobRejected, msg)
}

// refusalCause is what makes two refusals the same (jobstate.Refusal).
func refusalCause(msg string) string {
	cause, _, _ := jobstate.Refusal(msg)
	return cause
}

// maxRunMessage is status.runs[].message's schema bound.
const maxRunMessage = 1024

func runMessage(msg string) string {
	if len(msg) > maxRunMessage {
		msg = strings.ToValidUTF8(msg[:maxRunMessage], "")
	}
	return msg
}

// readyReason is the reason of the Ready condition in st ("" if none).
func readyReason(st *v1alpha1.ScheduledJobStatus) string {
	if c := meta.FindStatusCondition(st.Conditions, ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// runNowTime is when the run-now Job of c was created, as its scheduled-time annotation says
// (newJob: the pass's now); nil when the annotation cannot be read.
func runNowTime(c creation) *metav1.Time {
	at, err := time.Parse(time.RFC3339, c.job.Annotations[jobstate.ScheduledTimeAnnotation])
	if err != nil {
		return nil
	}
	return &metav1.Time{Time: at}
}
