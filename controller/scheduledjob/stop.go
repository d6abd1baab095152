package scheduledjob

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// The stop strategy (spec.stopStrategy): a ScheduledJob suspends itself after a number of
// consecutive failed (or successful) runs. Nothing is counted in memory: the streak is read from
// the run history the status records (status.runs), so a restart or a new leader counts the same.
//
//  1. Trigger. A pass that finds the streak long enough while spec.suspend is false plans only
//     the stop (plan.stop): the reconciler sets spec.suspend to true with an optimistic lock
//     (stopBySuspending) and decides again on the same inputs.
//  2. Record. The suspend step of that second decision, or of the next pass if the process died
//     between the two writes, finds the ScheduledJob suspended while the streak (counted as the
//     status read says) still reaches the threshold: Ready says StoppedAfterFailures (False) or
//     StoppedAfterSuccesses (True), with one Event, sent when Ready changes to it and only after
//     the status write succeeded. While suspended, Ready keeps saying so.
//  3. Resume. While suspended (by a user or by the stop) every pass moves status.stopCountAfter
//     to the newest run recorded, and only runs scheduled after it count: when a user sets
//     spec.suspend back to false, the runs that stopped it (and those still running then) are
//     not counted again, so it runs until a new streak reaches the threshold.

// Reasons of the Ready condition and of the Event when the stop strategy suspends a ScheduledJob.
const (
	ReasonStoppedAfterFailures  = "StoppedAfterFailures"
	ReasonStoppedAfterSuccesses = "StoppedAfterSuccesses"
)

// streak returns the result of the newest finished run scheduled after `after` (nil: all count),
// how many consecutive runs before it ended the same way, and a name for the newest of them (its
// Job, or the time of a run whose Job the API server refused). runs are newest first, as
// status.runs; Running, Skipped and Deleted runs are passed over: they neither count nor break
// the streak.
func streak(runs []v1alpha1.ScheduledJobRun, after *metav1.Time) (result v1alpha1.RunResult, n int, newest string) {
	for _, r := range runs {
		if after != nil && !r.ScheduledTime.After(after.Time) {
			break
		}
		if r.Result != v1alpha1.RunFailed && r.Result != v1alpha1.RunSucceeded {
			continue
		}
		if n == 0 {
			result, newest = r.Result, r.JobName
			if newest == "" {
				newest = "the refused run of " + r.ScheduledTime.UTC().Format(time.RFC3339)
			}
		} else if r.Result != result {
			break
		}
		n++
	}
	return result, n, newest
}

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
		return ReasonStoppedAfterFailures, fmt.Sprintf("Suspended after %d consecutive failed runs (stopStrategy.afterFailures %d; the last: %s): set spec.suspend to false to resume", n, *ss.AfterFailures, newest)
	case result == v1alpha1.RunSucceeded && ss.AfterSuccesses != nil && n >= int(*ss.AfterSuccesses):
		return ReasonStoppedAfterSuccesses, fmt.Sprintf("Suspended after %d consecutive successful runs (stopStrategy.afterSuccesses %d; the last: %s): set spec.suspend to false to resume", n, *ss.AfterSuccesses, newest)
	}
	return "", ""
}

// stopped returns Ready as read when it says the stop strategy suspended sj.
func stopped(sj *v1alpha1.ScheduledJob) *metav1.Condition {
	c := meta.FindStatusCondition(sj.Status.Conditions, ConditionReady)
	if c != nil && (c.Reason == ReasonStoppedAfterFailures || c.Reason == ReasonStoppedAfterSuccesses) {
		return c
	}
	return nil
}

// suspendedReady is Ready while sj is suspended (spec.suspend): stopped by its stop strategy,
// as Ready read already says, or as the streak counted from the status read says (the pass that
// records the stop); else suspended by a user. It returns the condition's status, reason and
// message and the type of the Event sent when Ready changes to it.
func suspendedReady(sj *v1alpha1.ScheduledJob, runs []v1alpha1.ScheduledJobRun) (status metav1.ConditionStatus, reason, msg, eventType string) {
	reason, msg = ReasonSuspended, "Suspended: no new Jobs are created"
	if c := stopped(sj); c != nil {
		reason, msg = c.Reason, c.Message
	} else if r, m := stopDue(sj, runs, sj.Status.StopCountAfter); r != "" {
		reason, msg = r, m
	}
	if reason == ReasonStoppedAfterFailures {
		// The runs fail: something to fix, as Argo CD (Degraded) and kstatus (Failed) show it.
		return metav1.ConditionFalse, reason, msg, corev1.EventTypeWarning
	}
	return metav1.ConditionTrue, reason, msg, corev1.EventTypeNormal
}

// countAfter is status.stopCountAfter while suspended: the newest run recorded (runs are newest
// first), never earlier than it was.
func countAfter(old *metav1.Time, runs []v1alpha1.ScheduledJobRun) *metav1.Time {
	if len(runs) == 0 || (old != nil && !runs[0].ScheduledTime.After(old.Time)) {
		return old
	}
	t := runs[0].ScheduledTime
	return &t
}

// stopBySuspending sets sj's spec.suspend to true, with an optimistic lock: a ScheduledJob read
// from a cache behind the API server (the user resumed or edited it meanwhile) is not suspended
// on what it no longer says. It reports false when the object changed or is gone; sj is then
// the API server's object, suspended.
func (r *Reconciler) stopBySuspending(ctx context.Context, sj *v1alpha1.ScheduledJob) (bool, error) {
	before := sj.DeepCopy()
	sj.Spec.Suspend = ptr.To(true)
	// A merge patch of the difference: spec.suspend and the resourceVersion, nothing of the
	// cache's bounded form (bounded.go) is sent.
	err := r.Client.Patch(ctx, sj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("suspending after the stop strategy: %w", err)
	}
	r.confirmed.wrote(sj)
	return true, nil
}
