package slotplan

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

var base = time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)

func slotJob(name string, slot time.Time, cond batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{jobstate.ScheduledTimeAnnotation: slot.Format(time.RFC3339)}}}
	j.Status.StartTime = &metav1.Time{Time: slot.Add(time.Second)}
	if cond != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(slot.Add(time.Minute))}}
		if cond == batchv1.JobComplete {
			j.Status.CompletionTime = &metav1.Time{Time: slot.Add(time.Minute)}
		}
	}
	return j
}

func results(runs []v1alpha1.ScheduledJobRun) string {
	s := ""
	for _, r := range runs {
		s += r.JobName + ":" + string(r.Result) + " "
	}
	return s
}

func TestRunHistory(t *testing.T) {
	s1, s2, s3 := base, base.Add(time.Hour), base.Add(2*time.Hour)
	for _, tc := range []struct {
		name     string
		prev     []v1alpha1.ScheduledJobRun
		children []*batchv1.Job
		limit    int
		want     string
	}{
		{"running, then finished, newest first", nil,
			[]*batchv1.Job{slotJob("a", s1, batchv1.JobComplete), slotJob("b", s2, batchv1.JobFailed), slotJob("c", s3, "")}, 10,
			"c:Running b:Failed a:Succeeded "},
		{"a pruned Job keeps its record", []v1alpha1.ScheduledJobRun{{ScheduledTime: metav1.NewTime(s1), JobName: "a", Result: v1alpha1.RunSucceeded}},
			[]*batchv1.Job{slotJob("b", s2, batchv1.JobComplete)}, 10, "b:Succeeded a:Succeeded "},
		{"a Job gone while running is Deleted", []v1alpha1.ScheduledJobRun{{ScheduledTime: metav1.NewTime(s1), JobName: "a", Result: v1alpha1.RunRunning}},
			nil, 10, "a:Deleted "},
		{"the limit keeps the newest", nil,
			[]*batchv1.Job{slotJob("a", s1, batchv1.JobComplete), slotJob("b", s2, batchv1.JobComplete), slotJob("c", s3, batchv1.JobComplete)}, 2,
			"c:Succeeded b:Succeeded "},
		{"limit 0 keeps nothing", nil, []*batchv1.Job{slotJob("a", s1, "")}, 0, ""},
		{"a Job without a scheduled time is not a run", nil, []*batchv1.Job{{ObjectMeta: metav1.ObjectMeta{Name: "x"}}}, 10, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := results(runHistory(tc.prev, tc.children, tc.limit)); got != tc.want {
				t.Errorf("runs = %q, want %q", got, tc.want)
			}
		})
	}
	// A skipped slot is a record without a Job, said once, in time order.
	runs := runHistory(nil, []*batchv1.Job{slotJob("a", s1, batchv1.JobComplete)}, 10)
	skipped := v1alpha1.ScheduledJobRun{ScheduledTime: metav1.NewTime(s2), Result: v1alpha1.RunSkipped, Reason: ReasonMissedDeadline}
	runs = addRun(runs, skipped, 10)
	runs = addRun(runs, skipped, 10)
	if len(runs) != 2 || runs[0].Result != v1alpha1.RunSkipped || runs[0].Reason != ReasonMissedDeadline || runs[1].JobName != "a" {
		t.Errorf("runs = %+v, want the skipped slot first, once", runs)
	}
	// The record survives a later pass that no longer sees Job a.
	if got := results(runHistory(runs, nil, 10)); got != ":Skipped a:Succeeded " {
		t.Errorf("after pruning: %q", got)
	}
}

func TestRunRecordedDone(t *testing.T) {
	s1, s2, s3 := base, base.Add(time.Hour), base.Add(2*time.Hour)
	runs := []v1alpha1.ScheduledJobRun{
		{ScheduledTime: metav1.NewTime(s3), JobName: "c", Result: v1alpha1.RunRunning},
		{ScheduledTime: metav1.NewTime(s2), JobName: "b", Result: v1alpha1.RunSucceeded},
	}
	for _, tc := range []struct {
		name  string
		job   *batchv1.Job
		limit int
		want  bool
	}{
		{"recorded as succeeded", slotJob("b", s2, batchv1.JobComplete), 10, true},
		{"recorded as running only", slotJob("c", s3, batchv1.JobComplete), 10, false},
		{"not recorded, within the window", slotJob("a", s1, batchv1.JobComplete), 10, false},
		{"not recorded, older than a full window", slotJob("a", s1, batchv1.JobComplete), 2, true},
		{"no scheduled time: nothing to keep", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, 10, true},
	} {
		if got := runRecordedDone(runs, tc.job, tc.limit); got != tc.want {
			t.Errorf("%s: runRecordedDone = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// setResult records a Job's phase as the run's result by name: each phase jobstate.Judge gives
// is the run result of the same name.
func TestJobPhasesAreRunResults(t *testing.T) {
	for phase, result := range map[jobstate.Phase]v1alpha1.RunResult{
		jobstate.PhaseRunning: v1alpha1.RunRunning, jobstate.PhaseWaiting: v1alpha1.RunWaiting,
		jobstate.PhaseSucceeded: v1alpha1.RunSucceeded, jobstate.PhaseFailed: v1alpha1.RunFailed,
	} {
		if v1alpha1.RunResult(phase) != result {
			t.Errorf("phase %q is not the run result %q", phase, result)
		}
	}
}

// RunOf is the one answer of At and ScheduledJob to "how does this run stand": its Job says, and
// without one, a run that had not ended was deleted while one that had ended keeps its result.
func TestRunOfJudgesTheJobElseKeepsWhatEnded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		job      *batchv1.Job
		recorded v1alpha1.RunResult
		want     v1alpha1.RunResult
	}{
		{"a running Job is Running, whatever was recorded", slotJob("a", base, ""), v1alpha1.RunSucceeded, v1alpha1.RunRunning},
		{"a complete Job is Succeeded", slotJob("a", base, batchv1.JobComplete), v1alpha1.RunRunning, v1alpha1.RunSucceeded},
		{"a failed Job is Failed", slotJob("a", base, batchv1.JobFailed), "", v1alpha1.RunFailed},
		{"gone while running: Deleted", nil, v1alpha1.RunRunning, v1alpha1.RunDeleted},
		{"gone while waiting: Deleted", nil, v1alpha1.RunWaiting, v1alpha1.RunDeleted},
		{"gone while not ended by any other name (an At's Pending): Deleted", nil, "Pending", v1alpha1.RunDeleted},
		{"gone after it succeeded: Succeeded", nil, v1alpha1.RunSucceeded, v1alpha1.RunSucceeded},
		{"gone after it failed: Failed", nil, v1alpha1.RunFailed, v1alpha1.RunFailed},
		{"skipped: Skipped", nil, v1alpha1.RunSkipped, v1alpha1.RunSkipped},
		{"deleted: Deleted", nil, v1alpha1.RunDeleted, v1alpha1.RunDeleted},
	} {
		if got, o := RunOf(tc.job, tc.recorded); got != tc.want || (tc.job == nil && o != (jobstate.Outcome{})) {
			t.Errorf("%s: RunOf = %s %+v, want %s", tc.name, got, o, tc.want)
		}
	}
}
