package slotplan

import (
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// ClaimRecorded reports whether the written status of sj records the claim of its Job j: a slot
// Job's slot is at or before lastScheduleTime; a run-now Job's token was recorded or is no longer
// asked for; a backfill Job is before the cursor of the backfill running for the value still asked
// for (or none runs), or status.backfilled lists its slot (Replace records it so before it
// replaces the Job). A Job whose claim is not recorded must not be deleted: it is the only trace
// of its slot.
func ClaimRecorded(sj *v1alpha1.ScheduledJob, j *batchv1.Job) bool {
	st := &sj.Status
	if slot, ok := slotOf(sj, j, true); ok {
		bf := st.Backfill
		return bf == nil || bf.Phase != v1alpha1.BackfillRunning || bf.Request != sj.Annotations[keys.AnnotationBackfill] ||
			bf.NextSlot == nil || slot.Before(bf.NextSlot.Time) || InRanges(st.Backfilled, slot) != nil
	}
	if token, ok := j.Annotations[keys.AnnotationRunNowToken]; ok {
		return token == st.LastRunNowToken || token != sj.Annotations[keys.AnnotationRunNow]
	}
	// Unreadable: not a slot Job of ours (the annotation was edited away), nothing to protect.
	slot, err := time.Parse(time.RFC3339, j.Annotations[jobstate.ScheduledTimeAnnotation])
	return err != nil || st.LastScheduleTime != nil && !slot.After(st.LastScheduleTime.Time)
}

// historyToPrune returns the finished Jobs beyond the history limits that the written status of
// sj no longer needs: their claim is recorded and they are not listed as active.
func historyToPrune(sj *v1alpha1.ScheduledJob, succeeded, failed []*batchv1.Job) []*batchv1.Job {
	candidates := append(oldest(succeeded, ptr.Deref(sj.Spec.SuccessfulJobsHistoryLimit, 3)), oldest(failed, ptr.Deref(sj.Spec.FailedJobsHistoryLimit, 1))...)
	var out []*batchv1.Job
	for _, j := range candidates {
		// A Job already deleted (by its TTL, or being deleted) is history, never pruned again.
		if j.DeletionTimestamp != nil || WasActive(sj, j.UID) || !ClaimRecorded(sj, j) ||
			(runHistoryLimit(sj) > 0 && !runRecordedDone(sj.Status.Runs, j, runHistoryLimit(sj))) {
			continue // the next pass, started by this pass's status write, prunes it
		}
		out = append(out, j)
	}
	return out
}

// CreateResult is the API server's answer to one create of the plan: the Job created or adopted
// (got), or none, with the Event that says so (none for a Job adopted after AlreadyExists).
type CreateResult struct {
	Creation
	Got *batchv1.Job
	Ev  Event
}

// OnlyRecordsSlotJobs reports whether all this pass did is create slot Jobs, and all its status
// write would say is their record, with no Event but the creates': the next pass computes exactly
// that from the Jobs (recordClaims) and the clock, so this one may leave it to it.
func OnlyRecordsSlotJobs(sj *v1alpha1.ScheduledJob, p *Plan) bool {
	if len(p.Creates) == 0 || len(p.Replace) > 0 || p.Skipped != "" || len(p.PassedOver) > 0 || len(p.Finished) > 0 ||
		slices.ContainsFunc(p.Creates, func(c Creation) bool { return c.Slot == nil }) ||
		slices.ContainsFunc(p.Events, func(e Event) bool { return e.Reason != ReasonSuccessfulCreate }) {
		return false
	}
	read, planned := sj.Status.DeepCopy(), p.Status.DeepCopy()
	for _, st := range []*v1alpha1.ScheduledJobStatus{read, planned} {
		st.LastScheduleTime, st.Active, st.ActiveCount, st.NextScheduleTime = nil, nil, 0, nil
		if c := meta.FindStatusCondition(st.Conditions, ConditionReady); c != nil && c.Reason == ReasonScheduled {
			c.Message = "" // "Next run at ...": the clock's too
		}
	}
	return equality.Semantic.DeepEqual(read, planned)
}

// RecordCreates records a pass's creates from the API server's answers at now (pure), so that
// the loop that creates changes no status: a Job created or adopted is active and its run-now
// token or slot recorded; a refusal is refusedRun's; a name taken by a Job not ours records
// nothing but the Event. Each answer about a backfill's slot ends that slot, but a refusal at
// admission (recordBackfill).
func RecordCreates(sj *v1alpha1.ScheduledJob, p *Plan, results []CreateResult, now time.Time) {
	st := &p.Status
	defer fitStatus(st)
	for _, res := range results {
		switch {
		case res.Ev.Reason == ReasonJobRejected:
			refusedRun(sj, p, res.Creation, res.Ev.Note, now)
		case res.Ev.Reason != "":
			p.Events = append(p.Events, res.Ev)
		}
		if res.backfill != nil {
			recordBackfill(sj, p, res, now) // the name taken by a Job not ours ends the slot too
		}
		if res.Got == nil || res.Ev.Reason == ReasonJobRejected {
			continue
		}
		ref, known := activeRef(st.Active, res.Got)
		if finished, _, _ := jobstate.Finished(res.Got); !known && !finished {
			st.ActiveCount++
			if len(st.Active) < maxActiveRefs {
				st.Active = append(st.Active, ref)
			}
		}
		if res.Slot != nil && res.Ev.Reason == ReasonSuccessfulCreate && ready(st).Reason == ReasonJobRejected {
			// The template works again (or what refused it changed).
			setReady(sj, st, metav1.ConditionTrue, ReasonScheduled, p.scheduled)
		}
		switch {
		case res.backfill != nil:
		case res.Slot == nil:
			st.LastRunNowToken = res.token
			st.LastRunNowTime = runNowTime(res.Creation)
		case st.LastScheduleTime == nil || res.Slot.After(st.LastScheduleTime.Time):
			st.LastScheduleTime = &metav1.Time{Time: *res.Slot}
		}
	}
}

// refusedRun records a Job the API server refused at now: a Failed run, reason JobRejected, with
// the API server's message (in place of a skip recorded for the same slot). A refusal at
// admission is tried again while the slot can start (retryRefusal), one as invalid only after an
// edit of the spec. A scheduled slot's refusal sets Ready False, with one Warning per distinct
// refusal (the same quota refusing every slot is one Warning, not one a minute); a run-now or
// backfill refusal has only its Warning (a backfill slot refused at admission is tried again
// while its request stands: recordBackfill).
func refusedRun(sj *v1alpha1.ScheduledJob, p *Plan, c Creation, msg string, now time.Time) {
	st := &p.Status
	at, warn := now, true
	switch {
	case c.Slot != nil:
		at = *c.Slot
		if r := InRanges(sj.Status.NotRun, at); r == nil || r.Reason != ReasonJobRejected {
			p.Skipped = ReasonJobRejected // counted once, not per try (retryRefused)
		}
		st.LastSkippedTime = &metav1.Time{Time: at}
		recordNotRun(st, p.sched, at, at, ReasonJobRejected)
		if retry, ok := retryRefusal(sj, p.sched, nil, at, msg, now.Truncate(time.Second)); ok {
			requeueWithin(p, retry.Sub(now))
		}
		old := ready(st)
		warn = old.Reason != ReasonJobRejected || refusalCause(old.Message) != refusalCause(msg)
		setReady(sj, st, metav1.ConditionFalse, ReasonJobRejected, msg)
	case c.backfill != nil:
		at = *c.backfill
		// Lasting (the run history keeps only its limit): consecutive refused slots are one range.
		recordNotRun(st, p.sched, at, at, ReasonJobRejected)
		// Tried again while its request stands: one Warning per distinct refusal, not one per try.
		warn = !slices.ContainsFunc(sj.Status.Runs, func(r v1alpha1.ScheduledJobRun) bool {
			return r.JobName == "" && r.Reason == ReasonJobRejected && r.ScheduledTime.Time.Equal(at) && refusalCause(r.Message) == refusalCause(msg)
		})
	default:
		st.LastRunNowToken = c.token
		if st.LastRunNowTime = runNowTime(c); st.LastRunNowTime != nil {
			at = st.LastRunNowTime.Time
		}
	}
	st.Runs = slices.DeleteFunc(st.Runs, func(r v1alpha1.ScheduledJobRun) bool { return r.JobName == "" && r.ScheduledTime.Time.Equal(at) })
	st.Runs = addRun(st.Runs, v1alpha1.ScheduledJobRun{ScheduledTime: metav1.NewTime(at), Result: v1alpha1.RunFailed,
		Reason: ReasonJobRejected, Message: runMessage(msg), CompletionTime: &metav1.Time{Time: now.Truncate(time.Second)}}, runHistoryLimit(sj))
	if warn {
		p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonJobRejected, msg})
	}
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

// ready is the Ready condition in st (zero if none).
func ready(st *v1alpha1.ScheduledJobStatus) metav1.Condition {
	return ptr.Deref(meta.FindStatusCondition(st.Conditions, ConditionReady), metav1.Condition{})
}

// runNowTime is when the run-now Job of c was created, as its scheduled-time annotation says
// (newJob: the pass's now); nil when the annotation cannot be read.
func runNowTime(c Creation) *metav1.Time {
	at, err := time.Parse(time.RFC3339, c.Job.Annotations[jobstate.ScheduledTimeAnnotation])
	if err != nil {
		return nil
	}
	return &metav1.Time{Time: at}
}
