package slotplan

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// refused is childJob(slot, running) as the Job controller of Kubernetes 1.36 leaves it when
// admission refuses every pod create: startTime, ready and terminating 0, no condition.
func refused(slot time.Time) *batchv1.Job {
	j := childJob(slot, running)
	j.Status.Ready, j.Status.Terminating = ptr.To[int32](0), ptr.To[int32](0)
	j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	return j
}

func withPods(j *batchv1.Job) *batchv1.Job {
	j = j.DeepCopy()
	j.Status.Active, j.Status.Ready = 1, ptr.To[int32](1)
	return j
}

// TestDecidePodsNotCreated follows one ScheduledJob (concurrencyPolicy Allow, so Jobs pile up)
// through passes, each reading the status the pass before wrote.
func TestDecidePodsNotCreated(t *testing.T) {
	const after = 2 * time.Minute
	older, newer := refused(thePriorHour), refused(topOfTheHour)
	sj := newSJ(lastSchedule(topOfTheHour), activeIn(older, newer))
	for _, step := range []struct {
		name       string
		jobs       []*batchv1.Job
		now        time.Time
		wantStuck  []string // Jobs the JobsStuck condition names; nil: no condition
		wantEvents []string // Jobs a PodsNotCreated Warning is sent for
		wantCheck  time.Duration
	}{
		{name: "a Job with no pod past the threshold is reported, once; a younger one is looked at when it would count",
			jobs: []*batchv1.Job{older, newer}, now: topOfTheHour.Add(30 * time.Second),
			wantStuck: []string{older.Name}, wantEvents: []string{older.Name}, wantCheck: 90 * time.Second},
		{name: "the next pass sends no second Warning for the same Job",
			jobs: []*batchv1.Job{older, newer}, now: topOfTheHour.Add(time.Minute),
			wantStuck: []string{older.Name}, wantCheck: time.Minute},
		{name: "the second Job past the threshold: one Warning for it alone, the condition names both",
			jobs: []*batchv1.Job{older, newer}, now: topOfTheHour.Add(after),
			wantStuck: []string{older.Name, newer.Name}, wantEvents: []string{newer.Name}},
		{name: "no polling while both stay stuck",
			jobs: []*batchv1.Job{older, newer}, now: topOfTheHour.Add(time.Hour / 2),
			wantStuck: []string{older.Name, newer.Name}},
		{name: "pods appear (the quota was raised): the condition goes",
			jobs: []*batchv1.Job{withPods(older), withPods(newer)}, now: topOfTheHour.Add(time.Hour / 2)},
	} {
		t.Run(step.name, func(t *testing.T) {
			p := Decide(sj, step.jobs, step.now, noneDeleted, after)
			c := meta.FindStatusCondition(p.Status.Conditions, ConditionJobsStuck)
			switch {
			case step.wantStuck == nil && c != nil:
				t.Errorf("JobsStuck = %+v, want none", c)
			case step.wantStuck != nil && (c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonPodsNotCreated):
				t.Errorf("JobsStuck = %+v, want True/PodsNotCreated", c)
			case c != nil:
				for _, name := range []string{older.Name, newer.Name} {
					if mentions(c.Message, name) != slices.Contains(step.wantStuck, name) {
						t.Errorf("JobsStuck message %q: names %s = %t, want %t", c.Message, name, !slices.Contains(step.wantStuck, name), slices.Contains(step.wantStuck, name))
					}
				}
				if !strings.Contains(c.Message, "kubectl describe job") {
					t.Errorf("JobsStuck message %q does not say where to look", c.Message)
				}
			}
			var warned []string
			for _, e := range p.Events {
				if e.Reason == ReasonPodsNotCreated {
					for _, name := range []string{older.Name, newer.Name} {
						if strings.Contains(e.Note, "kubectl describe job "+name) {
							warned = append(warned, name)
						}
					}
				}
			}
			if !slices.Equal(warned, step.wantEvents) {
				t.Errorf("PodsNotCreated Warnings for %v, want %v", warned, step.wantEvents)
			}
			if p.PodsCheck != step.wantCheck {
				t.Errorf("podsCheck = %v, want %v", p.PodsCheck, step.wantCheck)
			}
			if c := meta.FindStatusCondition(p.Status.Conditions, ConditionReady); c == nil || c.Reason != ReasonScheduled {
				t.Errorf("Ready = %+v, want Scheduled: the schedule is fine", c)
			}
			sj.Status = p.Status // as the pass wrote it
		})
	}
}

func TestMentionsAWholeJobName(t *testing.T) {
	msg := "Jobs nightly-29581290-ab12, nightly-2-29581290-cd34 have created no pod"
	for name, want := range map[string]bool{
		"nightly-29581290-ab12": true, "nightly-2-29581290-cd34": true,
		"nightly-29581290": false, "ightly-29581290-ab12": false, "nightly-2": false,
	} {
		if got := mentions(msg, name); got != want {
			t.Errorf("mentions(%q) = %t, want %t", name, got, want)
		}
	}
}
