package scheduledjob

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

// A Job that admission refuses (here a ResourceQuota count/jobs.batch=0; a
// ValidatingAdmissionPolicy or a webhook answer the same way) is a result, not a miss: the slot
// is a Failed run with the API server's message, Ready is False (JobRejected) while the latest
// slot's Job is refused, one Warning per distinct refusal, and no MissedSlots. It used to leave
// Ready True, no run, a FailedCreate per slot retried with backoff, then a MissedSlots Warning
// saying the controller was stopped or behind.
func TestAJobRefusedByAdmissionIsAFailedRunAndSaysWhy(t *testing.T) {
	f := newFixture(t, false)
	ns := f.env.Namespace(t, "sj-quota")
	quota := f.env.NoJobsQuota(t, ns)
	sj := everyMinute(ns, "quota")
	f.create(t, sj)
	f.reconcile(t, sj)
	f.drainEvents()
	for i := range 3 {
		slot := f.nextMinute()
		f.reconcile(t, sj) // fails the test if the pass returns an error (a retry loop)
		f.reconcile(t, sj) // a second pass in the same minute changes nothing
		if n := len(f.jobsOf(t, sj)); n != 0 {
			t.Fatalf("%d Jobs exist under a quota of 0", n)
		}
		run := sj.Status.Runs[0]
		if !run.ScheduledTime.Time.Equal(slot) || run.Result != v1alpha1.RunFailed || run.Reason != slotplan.ReasonJobRejected || !strings.Contains(run.Message, "exceeded quota") {
			t.Errorf("slot %d: runs[0] = %+v, want the slot Failed/%s with the quota's message", i, run, slotplan.ReasonJobRejected)
		}
		if len(sj.Status.Runs) != i+1 {
			t.Errorf("slot %d: %d runs, want one per slot: %+v", i, len(sj.Status.Runs), sj.Status.Runs)
		}
		ready := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != slotplan.ReasonJobRejected || !strings.Contains(ready.Message, "exceeded quota") {
			t.Errorf("slot %d: Ready = %+v, want False/%s naming the quota", i, ready, slotplan.ReasonJobRejected)
		}
		var rejected, missed int
		for _, e := range f.drainEvents() {
			rejected += strings.Count(e, slotplan.ReasonJobRejected)
			missed += strings.Count(e, slotplan.ReasonMissedSlots) + strings.Count(e, "FailedCreate")
		}
		if want := map[bool]int{true: 1, false: 0}[i == 0]; rejected != want || missed != 0 {
			t.Errorf("slot %d: %d %s and %d MissedSlots/FailedCreate Events, want %d and 0 (one Warning per distinct refusal)", i, rejected, slotplan.ReasonJobRejected, missed, want)
		}
	}
	// The quota is lifted: the next slot runs, and Ready says so again.
	if err := f.env.Client.Delete(f.env.Ctx, quota); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the quota is gone", func() bool {
		return f.env.Manager.GetAPIReader().Get(f.env.Ctx, clientKey(quota), &corev1.ResourceQuota{}) != nil
	})
	f.nextMinute()
	f.slotPasses(t, sj)
	if n := len(f.jobsOf(t, sj)); n != 1 {
		t.Errorf("%d Jobs after the quota was lifted, want 1", n)
	}
	if ready := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready after the quota was lifted = %+v, want True", ready)
	}
}

func clientKey(o metav1.Object) client.ObjectKey {
	return client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}
}
