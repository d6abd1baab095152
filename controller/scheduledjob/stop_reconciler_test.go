package scheduledjob

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

// runSlot plays one slot: the passes that create and record its Job, the Job ending (succeeded
// or failed), and the pass that records how it ended.
func (f *fixture) runSlot(t *testing.T, sj *v1alpha1.ScheduledJob, succeeded bool) {
	t.Helper()
	slot := f.nextMinute()
	f.slotPasses(t, sj)
	f.endSlotJob(t, sj, slot, succeeded)
	f.reconcile(t, sj)
}

// endSlotJob finishes the Job of slot as the Job controller would.
func (f *fixture) endSlotJob(t *testing.T, sj *v1alpha1.ScheduledJob, slot time.Time, succeeded bool) {
	t.Helper()
	for _, j := range f.jobsOf(t, sj) {
		if j.Name == jobname.Slot(sj, slot) {
			if err := testenv.Finish(f.env.Ctx, f.env.Client, &j, succeeded, slot, slot.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			f.waitJobsCached(t, sj)
			return
		}
	}
	t.Fatalf("no Job for slot %v", slot)
}

// stopEvents counts the Events of the stop among those sent since the last drain.
func (f *fixture) stopEvents() int {
	n := 0
	for _, e := range f.drainEvents() {
		if strings.Contains(e, slotplan.ReasonStoppedAfterFailures) || strings.Contains(e, slotplan.ReasonStoppedAfterSuccesses) {
			n++
		}
	}
	return n
}

// isStopped reports whether the stop strategy holds sj (status.stop), and that it did not write
// the spec to do so.
func isStopped(sj *v1alpha1.ScheduledJob) bool {
	return sj.Status.Stop != nil && !ptr.Deref(sj.Spec.Suspend, false)
}

// resume changes the spec as the docs say (suspend, then not), a pass seeing each.
func (f *fixture) resume(t *testing.T, sj *v1alpha1.ScheduledJob) {
	t.Helper()
	for _, suspend := range []bool{true, false} {
		patch := client.MergeFrom(sj.DeepCopy())
		sj.Spec.Suspend = ptr.To(suspend)
		if err := f.env.Client.Patch(f.env.Ctx, sj, patch); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, sj)
	}
}

func readyReasonOf(sj *v1alpha1.ScheduledJob) string {
	if c := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

func TestStopStrategy(t *testing.T) {
	f := newFixture(t, false)
	ctx := f.env.Ctx

	t.Run("three failures in a row suspend, two do not, a success in between starts over; a resume counts anew", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-stop"), "flaky")
		sj.Spec.StopStrategy = &v1alpha1.StopStrategy{AfterFailures: ptr.To[int32](3)}
		f.create(t, sj)
		f.reconcile(t, sj)
		for i, ok := range []bool{false, false, true, false, false} {
			f.runSlot(t, sj, ok)
			if isStopped(sj) || f.stopEvents() != 0 {
				t.Fatalf("suspended (or an Event) after run %d of F F S F F: %+v", i+1, sj.Status.Runs)
			}
		}
		f.runSlot(t, sj, false) // the third failure since the success
		ready := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionReady)
		if !isStopped(sj) || ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != slotplan.ReasonStoppedAfterFailures {
			t.Fatalf("after F F S F F F: suspend %v, Ready %+v; want suspended, Ready False StoppedAfterFailures", isStopped(sj), ready)
		}
		if ready.ObservedGeneration != sj.Generation || sj.Status.ObservedGeneration != sj.Generation {
			t.Errorf("observedGeneration %d (Ready %d), want the suspended spec's %d", sj.Status.ObservedGeneration, ready.ObservedGeneration, sj.Generation)
		}
		if n := f.stopEvents(); n != 1 {
			t.Errorf("%d stop Events, want 1", n)
		}
		// Suspended: slots pass without Jobs, and the stop is not announced again.
		before := len(f.jobsOf(t, sj))
		f.nextMinute()
		f.reconcile(t, sj)
		f.reconcile(t, sj)
		if n := len(f.jobsOf(t, sj)); n != before || f.stopEvents() != 0 || readyReasonOf(sj) != slotplan.ReasonStoppedAfterFailures {
			t.Errorf("while stopped: %d Jobs (was %d), Ready %s; want no new Job, no second Event, still stopped", n, before, readyReasonOf(sj))
		}

		// The user resumes it: the failures that stopped it do not stop it again.
		f.resume(t, sj)
		// The resume runs the most recent slot passed while suspended (as upstream), and the
		// next pass records it.
		f.slotPasses(t, sj)
		if isStopped(sj) || readyReasonOf(sj) != slotplan.ReasonScheduled || meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionStalled) != nil {
			t.Fatalf("after the resume: suspend %v, Ready %s; want running, Scheduled, no Stalled; status %+v", isStopped(sj), readyReasonOf(sj), sj.Status)
		}
		f.runSlot(t, sj, false)
		f.runSlot(t, sj, false)
		if isStopped(sj) {
			t.Fatalf("suspended again after 2 failures since the resume: %+v", sj.Status.Runs)
		}
		f.runSlot(t, sj, false)
		if !isStopped(sj) || readyReasonOf(sj) != slotplan.ReasonStoppedAfterFailures || f.stopEvents() != 1 {
			t.Errorf("after 3 failures since the resume: suspend %v, Ready %s; want stopped again, one Event", isStopped(sj), readyReasonOf(sj))
		}
	})

	t.Run("one success stops a run-until-it-works job", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-stop-ok"), "until-done")
		sj.Spec.StopStrategy = &v1alpha1.StopStrategy{AfterSuccesses: ptr.To[int32](1)}
		f.create(t, sj)
		f.reconcile(t, sj)
		f.runSlot(t, sj, false)
		if isStopped(sj) {
			t.Fatal("a failure stopped a stop-after-one-success")
		}
		f.runSlot(t, sj, true)
		ready := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionReady)
		if !isStopped(sj) || ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != slotplan.ReasonStoppedAfterSuccesses || f.stopEvents() != 1 {
			t.Errorf("after a success: suspend %v, Ready %+v; want suspended, Ready True StoppedAfterSuccesses, one Event", isStopped(sj), ready)
		}
	})

	t.Run("the stop writes no spec, and nothing of the cache's bounded form of the object", func(t *testing.T) {
		sj := everyMinute(f.env.Namespace(t, "sj-stop-big"), "big")
		sj.Spec.JobTemplate = templateOf(8 << 10) // kept in the cache as its digest
		sj.Annotations = map[string]string{"team": "a", "note": strings.Repeat("n", 2<<10)}
		sj.Spec.StopStrategy = &v1alpha1.StopStrategy{AfterFailures: ptr.To[int32](1)}
		f.create(t, sj)
		want := sj.DeepCopy()
		f.reconcile(t, sj)
		generation := sj.Generation
		f.runSlot(t, sj, false)
		if !isStopped(sj) || readyReasonOf(sj) != slotplan.ReasonStoppedAfterFailures {
			t.Fatalf("suspend %v, Ready %s; want stopped after one failure", isStopped(sj), readyReasonOf(sj))
		}
		got := sj.Spec.JobTemplate.Spec.Template.Spec.Containers
		if len(got) != 1 || len(got[0].Env) != 1 || got[0].Env[0].Value != want.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env[0].Value ||
			sj.Annotations["team"] != "a" || sj.Annotations["note"] != want.Annotations["note"] {
			t.Errorf("the stop changed the object: containers %d, annotations %d", len(got), len(sj.Annotations))
		}
		if sj.Generation != generation {
			t.Errorf("generation %d, was %d: the stop wrote the spec", sj.Generation, generation)
		}
		if n := f.stopEvents(); n != 1 {
			t.Errorf("%d stop Events, want 1", n)
		}
	})

	// A process that dies before the stop's one write (its status write). Its successor (a
	// restart, a new leader: a fresh Reconciler, no memory) records the stop from the run
	// history, with one Event in all.
	for _, tc := range []struct {
		name  string
		funcs interceptor.Funcs
	}{
		{"dies before its status write", interceptor.Funcs{
			SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return errors.New("killed")
			},
		}},
	} {
		t.Run("a manager that "+tc.name+" is succeeded by one that finishes the stop once", func(t *testing.T) {
			sj := everyMinute(f.env.Namespace(t, "sj-stop-"+strings.ReplaceAll(tc.name, " ", "-")), "crash")
			sj.Spec.StopStrategy = &v1alpha1.StopStrategy{AfterFailures: ptr.To[int32](2)}
			f.create(t, sj)
			f.drainEvents()
			f.reconcile(t, sj)
			f.runSlot(t, sj, false)
			slot := f.nextMinute()
			f.slotPasses(t, sj)
			f.endSlotJob(t, sj, slot, false) // failure N
			testenv.WaitCacheCurrent(t, f.env, sj)
			dying := &Reconciler{Client: testenv.Intercept(f.env.Client, tc.funcs), APIReader: f.env.Manager.GetAPIReader(), Recorder: f.evs, Clock: f.clock, Metrics: f.rec.Metrics}
			if _, err := dying.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sj)}); err == nil {
				t.Fatal("the dying pass returned no error")
			}
			if n := f.stopEvents(); n != 0 {
				t.Fatalf("%d stop Events from the pass that died, want none before a status write", n)
			}
			m, err := NewMetrics(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			f.rec = &Reconciler{Client: f.env.Manager.GetClient(), APIReader: f.env.Manager.GetAPIReader(), Recorder: f.evs, Clock: f.clock, Metrics: m}
			f.reconcile(t, sj)
			f.reconcile(t, sj)
			if !isStopped(sj) || readyReasonOf(sj) != slotplan.ReasonStoppedAfterFailures {
				t.Errorf("after the successor: stopped %v, Ready %s; want stopped, StoppedAfterFailures", isStopped(sj), readyReasonOf(sj))
			}
			if n := f.stopEvents(); n != 1 {
				t.Errorf("%d stop Events in all, want 1", n)
			}
		})
	}
}
