package scheduledjob

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

// Issue 29: a Job with a short ttlSecondsAfterFinished completes and is deleted before a pass
// of its ScheduledJob looks. The informer saw it finish: its run is Succeeded, not Deleted, and
// its slot, even when not yet recorded, does not run again.
func TestAJobDeletedByItsTTLBeforeThePassKeepsItsResult(t *testing.T) {
	f := newFixture(t, false)
	var err error
	if f.rec.gone, err = jobs.WatchGone(f.env.Manager.GetCache(), "ScheduledJob", f.rec.Clock); err != nil {
		t.Fatal(err)
	}
	c, ctx := f.env.Client, f.env.Ctx
	finishAndDelete := func(t *testing.T, sj *v1alpha1.ScheduledJob) string {
		t.Helper()
		js := f.jobsOf(t, sj)
		if len(js) != 1 {
			t.Fatalf("%d jobs, want 1", len(js))
		}
		now := f.clock.Now()
		if err := testenv.Finish(ctx, c, &js[0], true, now, now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		f.waitJobsCached(t, sj)
		if err := c.Delete(ctx, &js[0], client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the Job is gone from the cache", func() bool {
			var list batchv1.JobList
			_ = c.List(ctx, &list, client.InNamespace(sj.Namespace))
			return len(list.Items) == 0
		})
		return js[0].Name
	}

	t.Run("a recorded run", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-ttl"), "ttl")
		f.create(t, sj)
		f.nextMinute()
		f.slotPasses(t, sj)
		f.drainEvents()
		name := finishAndDelete(t, sj)
		f.reconcile(t, sj)
		if len(sj.Status.Runs) != 1 || sj.Status.Runs[0].JobName != name || sj.Status.Runs[0].Result != v1alpha1.RunSucceeded || len(sj.Status.Active) != 0 {
			t.Fatalf("runs %+v, active %v; want %s Succeeded and nothing active", sj.Status.Runs, sj.Status.Active, name)
		}
		if sj.Status.LastSuccessfulTime == nil {
			t.Errorf("lastSuccessfulTime unset")
		}
		evs := f.drainEvents()
		if slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, slotplan.ReasonMissingJob) }) ||
			!slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, slotplan.ReasonSawCompletedJob) }) {
			t.Errorf("events %q, want %s and no %s", evs, slotplan.ReasonSawCompletedJob, slotplan.ReasonMissingJob)
		}
		// Recorded: the next pass leaves it out and writes nothing.
		rv := sj.ResourceVersion
		f.reconcile(t, sj)
		if sj.ResourceVersion != rv {
			t.Errorf("a further pass wrote the status again: %+v", sj.Status)
		}
	})

	t.Run("a slot not yet recorded", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-ttl-unrecorded"), "ttl")
		f.create(t, sj)
		f.reconcile(t, sj) // first sight: the schedule observed, Ready written
		slot := f.nextMinute()
		f.reconcile(t, sj) // the slot's Job, recorded by the next pass
		if sj.Status.LastScheduleTime != nil {
			t.Fatalf("lastScheduleTime %v after the slot pass, want it left to the next pass", sj.Status.LastScheduleTime)
		}
		name := finishAndDelete(t, sj)
		f.reconcile(t, sj)
		if js := f.jobsOf(t, sj); len(js) != 0 {
			t.Fatalf("jobs %v: the slot ran again", js)
		}
		if st := sj.Status; st.LastScheduleTime == nil || !st.LastScheduleTime.Time.Equal(slot) ||
			len(st.Runs) != 1 || st.Runs[0].JobName != name || st.Runs[0].Result != v1alpha1.RunSucceeded {
			t.Fatalf("status %+v; want the slot %v recorded, run %s Succeeded", st, slot, jobname.Slot(sj, slot))
		}
	})
}

// Issue 35: a pass that saw suspend returned before recording the slot whose Job the pass before
// it had created. With ttlSecondsAfterFinished 0 the Job was gone, jobs.Gone forgot it an hour
// later, and on resume the daily slot ran a second time. The suspended pass records it now.
func TestASlotCreatedRightBeforeASuspensionDoesNotRunAgainOnResume(t *testing.T) {
	f := newFixture(t, false)
	var err error
	if f.rec.gone, err = jobs.WatchGone(f.env.Manager.GetCache(), "ScheduledJob", f.rec.Clock); err != nil {
		t.Fatal(err)
	}
	c, ctx := f.env.Client, f.env.Ctx
	sj := everyMinute(f.env.Namespace(t, "sj-suspend-record"), "daily")
	f.create(t, sj)
	slot := f.clock.Now().UTC().Truncate(time.Minute).Add(2 * time.Minute)
	sj.Spec.Schedule = fmt.Sprintf("%d %d * * *", slot.Minute(), slot.Hour()) // once a day
	if err := c.Update(ctx, sj); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, sj)
	f.clock.SetTime(slot.Add(2 * time.Second))
	f.reconcile(t, sj) // creates the slot's Job; the record is the next pass's
	js := f.jobsOf(t, sj)
	if len(js) != 1 || sj.Status.LastScheduleTime != nil {
		t.Fatalf("setup: %d Jobs, lastScheduleTime %v; want the Job and no record yet", len(js), sj.Status.LastScheduleTime)
	}
	f.waitJobsCached(t, sj)
	sj.Spec.Suspend = ptr.To(true)
	if err := c.Update(ctx, sj); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, sj) // the next pass sees the suspension
	if sj.Status.LastScheduleTime == nil || !sj.Status.LastScheduleTime.Time.Equal(slot) {
		t.Errorf("lastScheduleTime %v after the suspended pass, want the slot %v recorded", sj.Status.LastScheduleTime, slot)
	}
	// The Job finishes and its TTL of 0 deletes it; jobs.Gone forgets it after an hour.
	now := f.clock.Now()
	if err := testenv.Finish(ctx, c, &js[0], true, now, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	f.waitJobsCached(t, sj)
	if err := c.Delete(ctx, &js[0], client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the Job is gone from the cache", func() bool {
		var list batchv1.JobList
		_ = c.List(ctx, &list, client.InNamespace(sj.Namespace))
		return len(list.Items) == 0
	})
	f.reconcile(t, sj)
	f.clock.Step(jobs.GoneRetention + 5*time.Minute)
	sj.Spec.Suspend = nil
	if err := c.Update(ctx, sj); err != nil {
		t.Fatal(err)
	}
	creates := 0
	orig := f.rec.Client
	f.rec.Client = testenv.CountJobCreates(orig, &creates)
	defer func() { f.rec.Client = orig }()
	f.reconcile(t, sj)
	if creates != 0 || len(f.jobsOf(t, sj)) != 0 {
		t.Errorf("on resume: %d creates, %d Jobs; the slot %v ran a second time", creates, len(f.jobsOf(t, sj)), slot)
	}
}
