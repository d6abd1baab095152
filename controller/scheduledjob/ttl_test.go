package scheduledjob

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/jobs"
)

// Issue 29: a Job with a short ttlSecondsAfterFinished completes and is deleted before a pass
// of its ScheduledJob looks. The informer saw it finish: its run is Succeeded, not Deleted, and
// its slot, even when not yet recorded, does not run again.
func TestAJobDeletedByItsTTLBeforeThePassKeepsItsResult(t *testing.T) {
	f := newFixture(t, false)
	if err := f.rec.watchGone(f.env.Manager); err != nil {
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
		if slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, ReasonMissingJob) }) ||
			!slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, ReasonSawCompletedJob) }) {
			t.Errorf("events %q, want %s and no %s", evs, ReasonSawCompletedJob, ReasonMissingJob)
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
			t.Fatalf("status %+v; want the slot %v recorded, run %s Succeeded", st, slot, jobs.SlotName(sj, slot))
		}
	})
}
