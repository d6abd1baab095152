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
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

// A Job that admission refuses (here a full ResourceQuota) may be accepted later: the At stays
// Pending, says JobRejected with the API server's message and one Warning, and the create is
// retried with backoff (no error, no retry loop at full speed) until it is accepted. It used to
// return the error on every pass, with nothing in the status.
func TestAnAtWhoseJobAdmissionRefusesRetriesWithBackoff(t *testing.T) {
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
		if at.Status.Phase != v1alpha1.AtPending || cond == nil || cond.Status != metav1.ConditionUnknown || cond.Reason != ReasonJobRejected || !strings.Contains(cond.Message, "exceeded quota") {
			t.Fatalf("pass %d: status = %+v, want Pending, Succeeded Unknown/%s with the quota's message", i, at.Status, ReasonJobRejected)
		}
		if res.RequeueAfter < time.Second || res.RequeueAfter > 5*time.Minute {
			t.Errorf("pass %d: requeueAfter = %v, want a backoff of 1s to 5m", i, res.RequeueAfter)
		}
		n := 0
		for _, e := range drain(f) {
			n += strings.Count(e, ReasonJobRejected)
		}
		if want := map[bool]int{true: 1, false: 0}[i == 0]; n != want {
			t.Errorf("pass %d: %d %s Warnings, want %d (one per distinct refusal)", i, n, ReasonJobRejected, want)
		}
		f.clock.Step(res.RequeueAfter)
	}
	if err := f.env.Client.Delete(f.env.Ctx, quota); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the quota is gone", func() bool {
		return f.env.Manager.GetAPIReader().Get(f.env.Ctx, client.ObjectKeyFromObject(quota), &corev1.ResourceQuota{}) != nil
	})
	f.reconcile(t, at)
	if at.Status.Phase != v1alpha1.AtRunning || len(f.jobsOf(t, at)) != 1 {
		t.Errorf("after the quota was lifted: phase %s, %d Jobs; want Running and 1", at.Status.Phase, len(f.jobsOf(t, at)))
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

// Refused until its deadline, an At fails with the refusal as its reason, not MissedDeadline:
// the manager was there, admission said no.
func TestAnAtRefusedUntilItsDeadlineFailsAsRefused(t *testing.T) {
	runAt := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	at := &v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 1},
		Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(runAt), Command: "true", StartingDeadlineSeconds: ptr.To[int64](60)}}
	d := decide(at, nil, runAt.Add(10*time.Second), 0)
	recordCreate(at, &d, nil, jobs.RefusedAtAdmission, slotplan.Event{Kind: "Warning", Reason: ReasonJobRejected, Note: "The API server refused Job a-1: exceeded quota"}, runAt.Add(10*time.Second))
	at.Status = d.status
	got := decide(at, nil, runAt.Add(2*time.Minute), 0)
	cond := meta.FindStatusCondition(got.status.Conditions, ConditionSucceeded)
	if got.status.Phase != v1alpha1.AtFailed || cond == nil || cond.Reason != ReasonJobRejected || !strings.Contains(cond.Message, "exceeded quota") {
		t.Errorf("status = %+v, want Failed/%s with the refusal", got.status, ReasonJobRejected)
	}
	if got.create {
		t.Error("a create past the deadline")
	}
}
