package scheduledjob

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
)

// Issue 28: a ScheduledJob whose Jobs' pods admission refuses (Pod Security, a ResourceQuota, a
// webhook) said nothing; the Job controller's FailedCreate Events land on the Job only. Envtest
// runs no Job controller: the test sets the Job's status to the shape that one leaves.
func TestScheduledJobReportsAJobWhosePodsAreNotCreated(t *testing.T) {
	f := newFixture(t, false)
	const after = 2 * time.Minute
	f.rec.PodsStuckAfter = after
	c, ctx := f.env.Client, f.env.Ctx
	sj := everyMinute(f.env.Namespace(t, "sj-pods-refused"), "as-root")
	sj.Spec.Schedule = "0 0 1 1 *" // no slot during the test: its Job is a run-now
	sj.Annotations = map[string]string{keys.AnnotationRunNow: "t1"}
	f.create(t, sj)
	start := f.clock.Now()
	f.reconcile(t, sj)
	js := f.jobsOf(t, sj)
	if len(js) != 1 || len(sj.Status.Active) != 1 {
		t.Fatalf("%d Jobs, active %v; want the run-now Job, active", len(js), sj.Status.Active)
	}
	job := js[0]
	if err := testenv.RefusePods(ctx, c, &job, start); err != nil {
		t.Fatal(err)
	}
	f.waitJobsCached(t, sj)
	f.drainEvents()

	f.clock.SetTime(start.Add(30 * time.Second))
	if res := f.reconcile(t, sj); res.RequeueAfter != after-30*time.Second {
		t.Errorf("no pod yet, before the threshold: requeue after %s, want %s (when it would count)", res.RequeueAfter, after-30*time.Second)
	}
	if c := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionJobsStuck); c != nil {
		t.Errorf("before the threshold: JobsStuck = %+v, want none", c)
	}

	f.clock.SetTime(start.Add(after))
	f.reconcile(t, sj)
	cond := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionJobsStuck)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != slotplan.ReasonPodsNotCreated || !strings.Contains(cond.Message, "kubectl describe job "+job.Name) {
		t.Fatalf("JobsStuck = %+v, want True/PodsNotCreated naming kubectl describe job %s", cond, job.Name)
	}
	if ready := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want True: the schedule is fine", ready)
	}
	f.reconcile(t, sj)
	var warned int
	for _, e := range f.drainEvents() {
		if strings.Contains(e, "Warning "+slotplan.ReasonPodsNotCreated) && strings.Contains(e, job.Name) {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d PodsNotCreated Warnings over two passes, want 1", warned)
	}

	// The cause is removed (the namespace relabelled): the Job controller creates the pod.
	if err := testenv.StartPod(ctx, c, &job); err != nil {
		t.Fatal(err)
	}
	f.waitJobsCached(t, sj)
	f.reconcile(t, sj)
	if c := meta.FindStatusCondition(sj.Status.Conditions, slotplan.ConditionJobsStuck); c != nil {
		t.Errorf("with a pod: JobsStuck = %+v, want it gone", c)
	}
	if len(sj.Status.Active) != 1 {
		t.Errorf("active = %v, want the Job still active", sj.Status.Active)
	}
}
