package slotplan

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// TestDecideReportsTheJobFeatures: for each Job feature, the Job as the Job controller of
// Kubernetes v1.36 leaves it (interim condition, then terminal one), what one pass reports: the
// run's result, reason and message in status.runs, whether the Job is still active, the
// runs-finished metric, and never JobsStuck for a Job that waits (suspended by a queue, or
// managed by another controller), however long it has had no pod.
func TestDecideReportsTheJobFeatures(t *testing.T) {
	const stuckAfter = 2 * time.Minute
	now := topOfTheHour.Add(time.Hour) // long past stuckAfter
	cond := func(typ batchv1.JobConditionType, reason, msg string) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
				LastTransitionTime: metav1.NewTime(topOfTheHour.Add(time.Minute))})
		}
	}
	noStatus := func(j *batchv1.Job) { j.Status = batchv1.JobStatus{} }
	podsGone := func(j *batchv1.Job) { j.Status.Active, j.Status.Ready = 0, ptr.To[int32](0) }
	const (
		failJob    = "Container main for pod snazzycats/x failed with exit code 42 matching FailJob rule at index 0"
		multiKueue = "kueue.x-k8s.io/multikueue"
	)
	for _, tc := range []struct {
		name     string
		mods     []func(*batchv1.Job)
		result   v1alpha1.RunResult
		reason   string
		msg      string // a part of the run's message
		active   bool
		finished []string
	}{
		{name: "podFailurePolicy FailJob, pods terminating: Running, active", mods: []func(*batchv1.Job){cond(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, failJob)},
			result: v1alpha1.RunRunning, active: true},
		{name: "podFailurePolicy FailJob, then Failed: Failed with the rule's reason and message, counted failed",
			mods:   []func(*batchv1.Job){podsGone, cond(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, failJob), cond(batchv1.JobFailed, batchv1.JobReasonPodFailurePolicy, failJob)},
			result: v1alpha1.RunFailed, reason: batchv1.JobReasonPodFailurePolicy, msg: "exit code 42", finished: []string{"failed"}},
		{name: "successPolicy met while an index failed: Succeeded, reason SuccessPolicy, counted succeeded",
			mods: []func(*batchv1.Job){podsGone, func(j *batchv1.Job) { j.Status.Failed, j.Status.Succeeded = 1, 1 },
				cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, "Matched rules at index 0"), cond(batchv1.JobComplete, batchv1.JobReasonSuccessPolicy, "Matched rules at index 0")},
			result: v1alpha1.RunSucceeded, reason: batchv1.JobReasonSuccessPolicy, msg: "Matched rules", finished: []string{"succeeded"}},
		{name: "backoffLimitPerIndex exceeded by one index: Failed, reason FailedIndexes, counted failed",
			mods: []func(*batchv1.Job){podsGone, func(j *batchv1.Job) { j.Status.Succeeded, j.Status.Failed, j.Status.FailedIndexes = 1, 2, ptr.To("1") },
				cond(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, "Job has failed indexes"), cond(batchv1.JobFailed, batchv1.JobReasonFailedIndexes, "Job has failed indexes")},
			result: v1alpha1.RunFailed, reason: batchv1.JobReasonFailedIndexes, finished: []string{"failed"}},
		{name: "suspended from the template with a Kueue queue label, an hour without a pod: Waiting, not stuck",
			mods: []func(*batchv1.Job){noStatus, func(j *batchv1.Job) {
				j.Spec.Suspend, j.Labels[jobstate.QueueNameLabel] = ptr.To(true), "team-queue"
			}, cond(batchv1.JobSuspended, "JobSuspended", "Job suspended")},
			result: v1alpha1.RunWaiting, reason: jobstate.ReasonJobSuspended, msg: "team-queue", active: true},
		{name: "managed by MultiKueue, no status from anyone for an hour: Waiting, managed elsewhere, not stuck",
			mods:   []func(*batchv1.Job){noStatus, func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To(multiKueue) }},
			result: v1alpha1.RunWaiting, reason: jobstate.ReasonManagedElsewhere, msg: multiKueue, active: true},
		{name: "managed elsewhere with the status mirrored from where it runs: Running",
			mods:   []func(*batchv1.Job){func(j *batchv1.Job) { j.Spec.ManagedBy, j.Status.Active = ptr.To(multiKueue), 1 }},
			result: v1alpha1.RunRunning, active: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := childJob(topOfTheHour, running)
			j.Status.Active, j.Status.Ready = 1, ptr.To[int32](1)
			for _, m := range tc.mods {
				m(j)
			}
			sj := newSJ(lastSchedule(topOfTheHour), activeIn(j))
			p := Decide(sj, []*batchv1.Job{j}, now, noneDeleted, stuckAfter)
			if len(p.Status.Runs) != 1 {
				t.Fatalf("runs = %+v, want the one run", p.Status.Runs)
			}
			r := p.Status.Runs[0]
			if r.JobName != j.Name || r.Result != tc.result || r.Reason != tc.reason || !strings.Contains(r.Message, tc.msg) {
				t.Errorf("run = %+v, want result %s, reason %q, a message with %q", r, tc.result, tc.reason, tc.msg)
			}
			if finished := r.CompletionTime != nil; finished != (len(tc.finished) > 0) {
				t.Errorf("completionTime = %v, want set: %t", r.CompletionTime, len(tc.finished) > 0)
			}
			if active := len(p.Status.Active) == 1; active != tc.active {
				t.Errorf("active = %v, want the Job active: %t", p.Status.Active, tc.active)
			}
			if len(p.Finished) != len(tc.finished) || (len(p.Finished) > 0 && p.Finished[0] != tc.finished[0]) {
				t.Errorf("runs counted finished = %v, want %v", p.Finished, tc.finished)
			}
			if c := meta.FindStatusCondition(p.Status.Conditions, ConditionJobsStuck); c != nil {
				t.Errorf("JobsStuck = %+v, want none", c)
			}
			for _, e := range p.Events {
				if e.Reason == ReasonPodsNotCreated {
					t.Errorf("event %+v, want no PodsNotCreated", e)
				}
			}
			if len(p.Replace) > 0 || len(p.Prune) > 0 {
				t.Errorf("replace %v, prune %v: a Job of this run is deleted", names(p.Replace), names(p.Prune))
			}
		})
	}
}

// A waiting run whose Job goes before it started is Deleted, without the reason it waited for.
func TestRunHistoryWaitingJobGone(t *testing.T) {
	prev := []v1alpha1.ScheduledJobRun{{ScheduledTime: metav1.NewTime(base), JobName: "a", Result: v1alpha1.RunWaiting, Reason: jobstate.ReasonJobSuspended, Message: "queued"}}
	got := runHistory(prev, nil, 10)
	if len(got) != 1 || got[0].Result != v1alpha1.RunDeleted || got[0].Reason != "" || got[0].Message != "" {
		t.Errorf("runs = %+v, want a Deleted run without reason or message", got)
	}
}
