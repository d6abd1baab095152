package at

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// A Job that admission refuses (here a ResourceQuota on count/jobs.batch) is the run's result, as
// for a ScheduledJob's slot: the At is Failed (JobRejected, the API server's message, one Warning),
// no retry loop; an edit of the At tries again, and runs it once the quota allows.
func TestAnAtWhoseJobAdmissionRefusesFailsAndAnEditRetries(t *testing.T) {
	f := newFixture(t, false)
	ns := f.env.Namespace(t, "at-quota")
	quota := f.env.NoJobsQuota(t, ns)
	at := commandAt(ns, "quota", f.clock.Now().Add(-time.Second))
	if err := f.env.Client.Create(f.env.Ctx, at); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		res := f.reconcile(t, at) // fails the test on an error
		cond := meta.FindStatusCondition(at.Status.Conditions, ConditionSucceeded)
		if at.Status.Phase != v1alpha1.AtFailed || cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonJobRejected || !strings.Contains(cond.Message, "exceeded quota") {
			t.Fatalf("pass %d: status = %+v, want Failed, Succeeded False/%s with the quota's message", i, at.Status, ReasonJobRejected)
		}
		if res.RequeueAfter != 0 {
			t.Errorf("pass %d: requeueAfter = %v, want none (a result, not a retry)", i, res.RequeueAfter)
		}
		n := 0
		for _, e := range drain(f) {
			n += strings.Count(e, ReasonJobRejected)
		}
		if want := map[bool]int{true: 1, false: 0}[i == 0]; n != want {
			t.Errorf("pass %d: %d %s Warnings, want %d (said once)", i, n, ReasonJobRejected, want)
		}
	}
	if err := f.env.Client.Delete(f.env.Ctx, quota); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the quota is gone", func() bool {
		return f.env.Manager.GetAPIReader().Get(f.env.Ctx, client.ObjectKeyFromObject(quota), &corev1.ResourceQuota{}) != nil
	})
	if f.reconcile(t, at); at.Status.Phase != v1alpha1.AtFailed || len(f.jobsOf(t, at)) != 0 {
		t.Fatalf("quota lifted, no edit: phase %s, %d Jobs; want still Failed and none", at.Status.Phase, len(f.jobsOf(t, at)))
	}
	at.Spec.StartingDeadlineSeconds = ptr.To[int64](3600) // an edit
	if err := f.env.Client.Update(f.env.Ctx, at); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, at)
	if at.Status.Phase != v1alpha1.AtRunning || len(f.jobsOf(t, at)) != 1 {
		t.Errorf("after an edit: phase %s, %d Jobs; want Running and 1", at.Status.Phase, len(f.jobsOf(t, at)))
	}
}

func drain(f *fixture) []string {
	var out []string
	for {
		select {
		case e := <-f.evs.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
