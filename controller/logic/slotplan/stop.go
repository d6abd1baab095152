package slotplan

import (
	"cmp"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// The stop strategy (spec.stopStrategy, docs/scheduling.md "Stop after failures"): the streak is
// read from status.runs and the stop is a status record (status.stop), never a spec write, so a
// restart, a new leader or a GitOps tool that owns the spec sees the same. A spec change resumes
// it, and status.stopCountAfter keeps the runs that stopped it from counting again.

// Reasons of the Ready condition and of the Event when the stop strategy stops a ScheduledJob, and
// the Event when a spec change resumes it.
const (
	ReasonStoppedAfterFailures  = "StoppedAfterFailures"
	ReasonStoppedAfterSuccesses = "StoppedAfterSuccesses"
	ReasonResumed               = "Resumed"
)

// runKey is when run r counts for the stop strategy: its start, or when it ended without a
// start (a refused Job), or its slot.
func runKey(r v1alpha1.ScheduledJobRun) time.Time {
	switch {
	case r.StartTime != nil:
		return r.StartTime.Time
	case r.CompletionTime != nil:
		return r.CompletionTime.Time
	}
	return r.ScheduledTime.Time
}

// streak returns the result of the newest finished run counted after `after` (nil: all count),
// how many consecutive counted runs before it ended the same way, and a name for the newest of
// them. runs are newest first; Running, Skipped and Deleted runs neither count nor break it.
func streak(runs []v1alpha1.ScheduledJobRun, after *metav1.Time) (result v1alpha1.RunResult, n int, newest string) {
	for _, r := range runs {
		if after != nil && !runKey(r).After(after.Time) || r.Result != v1alpha1.RunFailed && r.Result != v1alpha1.RunSucceeded {
			continue
		}
		if n == 0 {
			result, newest = r.Result, cmp.Or(r.JobName, "the refused run of "+r.ScheduledTime.UTC().Format(time.RFC3339))
		} else if r.Result != result {
			break
		}
		n++
	}
	return result, n, newest
}

// resumeHint ends a stop's message: how to resume.
const resumeHint = "change the spec to resume (fix what failed; or set spec.suspend to true, then back to false)"

// stopDue returns the reason and message of the stop sj's stop strategy asks for, given its
// runs and the time after which runs count; "" when none.
func stopDue(sj *v1alpha1.ScheduledJob, runs []v1alpha1.ScheduledJobRun, after *metav1.Time) (reason, msg string) {
	ss := sj.Spec.StopStrategy
	if ss == nil {
		return "", ""
	}
	result, n, newest := streak(runs, after)
	switch {
	case result == v1alpha1.RunFailed && ss.AfterFailures != nil && n >= int(*ss.AfterFailures):
		return ReasonStoppedAfterFailures, fmt.Sprintf("Stopped after %d consecutive failed runs (stopStrategy.afterFailures %d; the last: %s): %s", n, *ss.AfterFailures, newest, resumeHint)
	case result == v1alpha1.RunSucceeded && ss.AfterSuccesses != nil && n >= int(*ss.AfterSuccesses):
		return ReasonStoppedAfterSuccesses, fmt.Sprintf("Stopped after %d consecutive successful runs (stopStrategy.afterSuccesses %d; the last: %s): %s", n, *ss.AfterSuccesses, newest, resumeHint)
	}
	return "", ""
}

// stopStep is the stop step: it reports whether the stop strategy holds sj stopped in this pass,
// recording a new stop (status.stop) or ending one whose spec changed.
func stopStep(sj *v1alpha1.ScheduledJob, now time.Time, p *Plan) bool {
	st := &p.Status
	if st.Stop != nil {
		if st.Stop.Generation == sj.Generation {
			return true
		}
		st.Stop = nil
		st.StopCountAfter = countAfter(st.StopCountAfter, st.Runs)
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonResumed, fmt.Sprintf("Resumed: the spec changed since the stop (generation %d); runs recorded until now no longer count", sj.Generation)})
		return false
	}
	reason, _ := stopDue(sj, st.Runs, st.StopCountAfter)
	if reason == "" || ptr.Deref(sj.Spec.Suspend, false) {
		return false
	}
	st.Stop = &v1alpha1.StopRecord{Reason: reason, Generation: sj.Generation, Time: &metav1.Time{Time: now.Truncate(time.Second)}}
	return true
}

// suspendedReady is Ready while sj is held, and the type of the Event sent when Ready changes to
// it: stopped by its stop strategy, with the streak as the runs now say (a run that started
// before the stop and failed after it lengthens it) or, once it no longer reaches the threshold,
// as Ready said; else suspended by a user.
func suspendedReady(sj *v1alpha1.ScheduledJob, st *v1alpha1.ScheduledJobStatus) (status metav1.ConditionStatus, reason, msg, eventType string) {
	reason, msg = ReasonSuspended, "Suspended: no new Jobs are created"
	if st.Stop != nil {
		reason = st.Stop.Reason
		if r, m := stopDue(sj, st.Runs, st.StopCountAfter); r == reason {
			msg = m
		} else if c := ready(st); c.Reason == reason {
			msg = c.Message
		} else {
			msg = "Stopped by spec.stopStrategy: " + resumeHint
		}
	}
	if reason == ReasonStoppedAfterFailures {
		// The runs fail: something to fix, as Argo CD (Degraded) and kstatus (Failed) show it.
		return metav1.ConditionFalse, reason, msg, corev1.EventTypeWarning
	}
	return metav1.ConditionTrue, reason, msg, corev1.EventTypeNormal
}

// countAfter is status.stopCountAfter after a suspension or a stop: the newest run recorded (by
// runKey), never earlier than it was.
func countAfter(after *metav1.Time, runs []v1alpha1.ScheduledJobRun) *metav1.Time {
	for _, r := range runs {
		if k := runKey(r); after == nil || k.After(after.Time) {
			after = &metav1.Time{Time: k}
		}
	}
	return after
}
