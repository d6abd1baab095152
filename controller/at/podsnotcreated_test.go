package at

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// Issue 28: an At whose pods admission refuses (Pod Security, a ResourceQuota, a webhook) said
// Running forever; the Job controller's FailedCreate Events land on the Job only. Envtest runs no
// Job controller: the test sets the Job's status to the shape that one leaves.
func TestAtReportsAJobWhosePodsAreNotCreated(t *testing.T) {
	f := newFixture(t, false)
	const after = 2 * time.Minute
	f.rec.PodsStuckAfter = after
	c, ctx := f.env.Client, f.env.Ctx
	ns := f.env.Namespace(t, "at-pods-refused")
	start := f.clock.Now()
	at := commandAt(ns, "as-root", start)
	if err := c.Create(ctx, at); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, at)
	js := f.jobsOf(t, at)
	if len(js) != 1 {
		t.Fatalf("%d Jobs, want 1", len(js))
	}
	job := js[0]
	if err := testenv.RefusePods(ctx, c, &job, start); err != nil {
		t.Fatal(err)
	}
	f.waitCached(t, at, func(j *batchv1.Job) bool { return j.Status.StartTime != nil })
	f.drain()

	f.clock.SetTime(start.Add(30 * time.Second))
	if res := f.reconcile(t, at); res.RequeueAfter != after-30*time.Second {
		t.Errorf("no pod yet, before the threshold: requeue after %s, want %s (when it would count)", res.RequeueAfter, after-30*time.Second)
	}
	if cond := meta.FindStatusCondition(at.Status.Conditions, ConditionSucceeded); cond == nil || cond.Reason != ReasonRunning {
		t.Errorf("before the threshold: Succeeded = %+v, want Running", cond)
	}

	f.clock.SetTime(start.Add(after))
	res := f.reconcile(t, at)
	cond := meta.FindStatusCondition(at.Status.Conditions, ConditionSucceeded)
	if at.Status.Phase != v1alpha1.AtRunning || cond == nil || cond.Reason != ReasonPodsNotCreated || !strings.Contains(cond.Message, "kubectl describe job "+job.Name) {
		t.Fatalf("phase %s, Succeeded %+v; want Running with reason PodsNotCreated naming kubectl describe job %s", at.Status.Phase, cond, job.Name)
	}
	if at.Status.Message != cond.Message {
		t.Errorf("status.message %q, want the condition's", at.Status.Message)
	}
	if res.RequeueAfter != 0 {
		t.Errorf("stuck: requeue after %s, want none (the Job's status changing brings the next pass)", res.RequeueAfter)
	}
	f.reconcile(t, at)
	evs := f.drain()
	if n := len(slices.DeleteFunc(evs, func(e string) bool { return !strings.Contains(e, "Warning "+ReasonPodsNotCreated) })); n != 1 {
		t.Errorf("events %q, want one PodsNotCreated Warning over two passes", evs)
	}

	// The cause is removed (the quota raised): the Job controller creates the pod.
	if err := testenv.StartPod(ctx, c, &job); err != nil {
		t.Fatal(err)
	}
	f.waitCached(t, at, func(j *batchv1.Job) bool { return j.Status.Active == 1 })
	f.reconcile(t, at)
	if cond := meta.FindStatusCondition(at.Status.Conditions, ConditionSucceeded); at.Status.Phase != v1alpha1.AtRunning || cond == nil || cond.Reason != ReasonRunning {
		t.Errorf("with a pod: phase %s, Succeeded %+v; want Running/Running", at.Status.Phase, cond)
	}
}
