package slotplan

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// run is a run record of the hour h slots before topOfTheHour, with result r (F, S, R, K, D).
func run(hoursAgo int, r string) v1alpha1.ScheduledJobRun {
	at := topOfTheHour.Add(-time.Duration(hoursAgo) * time.Hour)
	res := map[string]v1alpha1.RunResult{"F": v1alpha1.RunFailed, "S": v1alpha1.RunSucceeded, "R": v1alpha1.RunRunning,
		"K": v1alpha1.RunSkipped, "D": v1alpha1.RunDeleted}[r]
	out := v1alpha1.ScheduledJobRun{ScheduledTime: metav1.NewTime(at), Result: res, JobName: "job-" + at.Format("1504")}
	if r == "K" {
		out.JobName = ""
	}
	return out
}

// runs builds a history newest first from results, the first one hour before topOfTheHour.
func runs(results string) []v1alpha1.ScheduledJobRun {
	var out []v1alpha1.ScheduledJobRun
	for i, r := range strings.Split(results, "") {
		out = append(out, run(i+1, r))
	}
	return out
}

func stopAfter(failures, successes int32) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) {
		sj.Spec.StopStrategy = &v1alpha1.StopStrategy{}
		if failures > 0 {
			sj.Spec.StopStrategy.AfterFailures = &failures
		}
		if successes > 0 {
			sj.Spec.StopStrategy.AfterSuccesses = &successes
		}
	}
}

func failedRuns(n int) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.Status.Runs = runs(strings.Repeat("F", n)) }
}

func succeededRuns(n int) sjOpt {
	return func(sj *v1alpha1.ScheduledJob) { sj.Status.Runs = runs(strings.Repeat("S", n)) }
}

func TestStopDue(t *testing.T) {
	hoursAgo := func(h int) *metav1.Time {
		return ptr.To(metav1.NewTime(topOfTheHour.Add(-time.Duration(h) * time.Hour)))
	}
	for _, tc := range []struct {
		name    string
		sj      *v1alpha1.ScheduledJob
		runs    string
		after   *metav1.Time
		want    string
		message string
	}{
		{"no stop strategy never stops", newSJ(), "FFFFFFFFFF", nil, "", ""},
		{"three failures in a row stop at three", newSJ(stopAfter(3, 0)), "FFF", nil, ReasonStoppedAfterFailures, "Stopped after 3 consecutive failed runs (stopStrategy.afterFailures 3; the last: job-0900)"},
		{"two failures do not stop at three", newSJ(stopAfter(3, 0)), "FF", nil, "", ""},
		{"a success between the failures starts the count over", newSJ(stopAfter(3, 0)), "FFSF", nil, "", ""},
		{"the newest run succeeding ends a failure streak", newSJ(stopAfter(3, 0)), "SFFF", nil, "", ""},
		{"running, skipped and deleted runs neither count nor break the streak", newSJ(stopAfter(3, 0)), "RFKFDF", nil, ReasonStoppedAfterFailures, "the last: job-0800"},
		{"a refused run is a failure", newSJ(stopAfter(1, 0)), "F", nil, ReasonStoppedAfterFailures, ""},
		{"only runs after stopCountAfter count", newSJ(stopAfter(3, 0)), "FFFFF", hoursAgo(3), "", ""},
		{"runs after stopCountAfter reaching the count stop", newSJ(stopAfter(2, 0)), "FFFFF", hoursAgo(3), ReasonStoppedAfterFailures, ""},
		{"one success stops after one success", newSJ(stopAfter(0, 1)), "SFFF", nil, ReasonStoppedAfterSuccesses, "Stopped after 1 consecutive successful runs (stopStrategy.afterSuccesses 1; the last: job-0900)"},
		{"failures do not stop a success-only strategy", newSJ(stopAfter(0, 1)), "FFFF", nil, "", ""},
		{"both: whichever streak the newest runs make", newSJ(stopAfter(2, 2)), "SSF", nil, ReasonStoppedAfterSuccesses, ""},
		{"no runs, nothing to count", newSJ(stopAfter(1, 1)), "", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := stopDue(tc.sj, runs(tc.runs), tc.after)
			if got != tc.want || !strings.Contains(msg, tc.message) {
				t.Errorf("stopDue = %q, %q; want %q with %q", got, msg, tc.want, tc.message)
			}
		})
	}
	// A refused run has no Job: the message names its time.
	refused := []v1alpha1.ScheduledJobRun{{ScheduledTime: metav1.NewTime(thePriorHour), Result: v1alpha1.RunFailed, Reason: ReasonJobRejected}}
	if _, msg := stopDue(newSJ(stopAfter(1, 0)), refused, nil); !strings.Contains(msg, "the refused run of 2016-05-19T09:00:00Z") {
		t.Errorf("message of a refused run: %q", msg)
	}
}

// TestStopStep runs decide through a stop: the pass that finds the streak records the stop
// (status.stop, Ready, one Event) and creates nothing; later passes keep it without a second
// Event and never write the spec; a change of the spec resumes, and the old runs do not count.
func TestStopStep(t *testing.T) {
	now := justAfterTheHour
	notDeleted := func(types.UID) bool { return false }
	withRuns := func(results string) sjOpt {
		return func(sj *v1alpha1.ScheduledJob) { sj.Status.Runs = runs(results) }
	}
	lastSlot := lastSchedule(topOfTheHour)

	var recorded *v1alpha1.ScheduledJob
	t.Run("at N failures the pass records the stop, with a Warning, and creates nothing", func(t *testing.T) {
		sj := newSJ(stopAfter(3, 0), withRuns("FFF"), lastSlot)
		p := Decide(sj, nil, now, notDeleted, 0)
		if len(p.Creates) != 0 || p.Status.Stop == nil || p.Status.Stop.Generation != sj.Generation || p.Status.Stop.Reason != ReasonStoppedAfterFailures {
			t.Fatalf("creates %d, status.stop %+v; want a stop of generation %d and no create", len(p.Creates), p.Status.Stop, sj.Generation)
		}
		c := meta.FindStatusCondition(p.Status.Conditions, ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonStoppedAfterFailures || !meta.IsStatusConditionTrue(p.Status.Conditions, ConditionStalled) {
			t.Fatalf("Ready = %+v, want False StoppedAfterFailures (and Stalled)", c)
		}
		if len(p.Events) != 1 || p.Events[0].Kind != corev1.EventTypeWarning || p.Events[0].Reason != ReasonStoppedAfterFailures {
			t.Errorf("events = %+v, want one Warning StoppedAfterFailures", p.Events)
		}
		if ptr.Deref(sj.Spec.Suspend, false) {
			t.Errorf("spec.suspend written")
		}
		recorded = sj.DeepCopy()
		recorded.Status = p.Status
	})
	t.Run("at N-1 failures the slot runs", func(t *testing.T) {
		p := Decide(newSJ(stopAfter(3, 0), withRuns("FF")), nil, now, notDeleted, 0)
		if p.Status.Stop != nil || len(p.Creates) != 1 {
			t.Fatalf("status.stop %+v, creates %d; want no stop, the slot's Job", p.Status.Stop, len(p.Creates))
		}
	})
	t.Run("a later pass while stopped keeps the condition, creates nothing and sends nothing", func(t *testing.T) {
		p := Decide(recorded.DeepCopy(), nil, now.Add(time.Hour), notDeleted, 0)
		if c := meta.FindStatusCondition(p.Status.Conditions, ConditionReady); c == nil || c.Reason != ReasonStoppedAfterFailures || len(p.Events) != 0 || len(p.Creates) != 0 {
			t.Errorf("Ready %+v, events %+v, creates %d; want StoppedAfterFailures kept, no Event, no Job", c, p.Events, len(p.Creates))
		}
	})
	t.Run("a run that started before the stop and failed after it is in the message", func(t *testing.T) {
		sj := recorded.DeepCopy()
		late := run(0, "F")
		late.StartTime = &metav1.Time{Time: topOfTheHour}
		sj.Status.Runs = append([]v1alpha1.ScheduledJobRun{late}, sj.Status.Runs...)
		p := Decide(sj, nil, now.Add(time.Hour), notDeleted, 0)
		if c := meta.FindStatusCondition(p.Status.Conditions, ConditionReady); c == nil || !strings.Contains(c.Message, "Stopped after 4 consecutive failed runs") {
			t.Errorf("Ready = %+v, want the 4 failures named", c)
		}
	})
	t.Run("a change of the spec resumes, and the old failures do not stop it again", func(t *testing.T) {
		sj := recorded.DeepCopy()
		sj.Generation++
		p := Decide(sj, nil, now.Add(time.Hour), notDeleted, 0)
		c := meta.FindStatusCondition(p.Status.Conditions, ConditionReady)
		if p.Status.Stop != nil || c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonScheduled || meta.FindStatusCondition(p.Status.Conditions, ConditionStalled) != nil {
			t.Errorf("status.stop %+v, Ready %+v; want no stop, Ready True Scheduled, no Stalled", p.Status.Stop, c)
		}
		if !slices.ContainsFunc(p.Events, func(e Event) bool { return e.Reason == ReasonResumed }) || len(p.Creates) != 1 {
			t.Errorf("events %+v, creates %d; want Resumed and the slot's Job", p.Events, len(p.Creates))
		}
		// Two, then three new failed runs that started after the resume.
		sj.Status = p.Status
		newer := []v1alpha1.ScheduledJobRun{run(-2, "F"), run(-1, "F")}
		for i := range newer {
			newer[i].StartTime = &metav1.Time{Time: now.Add(time.Duration(3-i) * time.Hour)}
		}
		sj.Status.Runs = append(newer, sj.Status.Runs...)
		if p := Decide(sj, nil, now.Add(3*time.Hour), notDeleted, 0); p.Status.Stop != nil {
			t.Errorf("stopped after 2 new failures, want 3")
		}
		third := run(-3, "F")
		third.StartTime = &metav1.Time{Time: now.Add(4 * time.Hour)}
		sj.Status.Runs = append([]v1alpha1.ScheduledJobRun{third}, sj.Status.Runs...)
		if p := Decide(sj, nil, now.Add(4*time.Hour), notDeleted, 0); p.Status.Stop == nil {
			t.Errorf("not stopped after 3 new failures")
		}
	})
	t.Run("a backfill's failures after a resume count, though their slots are old", func(t *testing.T) {
		sj := newSJ(stopAfter(2, 0), withRuns("FF"), lastSlot)
		sj.Status.StopCountAfter = &metav1.Time{Time: now}
		p := Decide(sj, nil, now, notDeleted, 0)
		if p.Status.Stop != nil {
			t.Fatalf("stopped on runs before stopCountAfter")
		}
		for i := range sj.Status.Runs {
			sj.Status.Runs[i].StartTime = &metav1.Time{Time: now.Add(time.Minute)}
		}
		if p := Decide(sj, nil, now.Add(2*time.Minute), notDeleted, 0); p.Status.Stop == nil {
			t.Errorf("backfill runs that started after stopCountAfter did not count")
		}
	})
	t.Run("a user's suspension is not a stop, and moves where the count starts", func(t *testing.T) {
		sj := newSJ(stopAfter(3, 0), withRuns("FF"), lastSlot, suspended)
		p := Decide(sj, nil, now, notDeleted, 0)
		if c := meta.FindStatusCondition(p.Status.Conditions, ConditionReady); c == nil || c.Reason != ReasonSuspended || p.Status.Stop != nil {
			t.Errorf("Ready = %+v, stop %+v; want Suspended, no stop", c, p.Status.Stop)
		}
		if p.Status.StopCountAfter == nil || !p.Status.StopCountAfter.Equal(&sj.Status.Runs[0].ScheduledTime) {
			t.Errorf("stopCountAfter = %v, want the newest run", p.Status.StopCountAfter)
		}
	})
	t.Run("stopped after successes: Ready True, a Normal Event", func(t *testing.T) {
		p := Decide(newSJ(stopAfter(0, 1), withRuns("S"), lastSlot), nil, now, notDeleted, 0)
		c := meta.FindStatusCondition(p.Status.Conditions, ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonStoppedAfterSuccesses || len(p.Events) != 1 || p.Events[0].Kind != corev1.EventTypeNormal {
			t.Errorf("Ready %+v, events %+v; want True StoppedAfterSuccesses and one Normal Event", c, p.Events)
		}
	})
}
