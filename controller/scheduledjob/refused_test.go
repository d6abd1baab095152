package scheduledjob

import (
	"fmt"
	"slices"
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
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
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
		if !run.ScheduledTime.Time.Equal(slot) || run.Result != v1alpha1.RunFailed || run.Reason != ReasonJobRejected || !strings.Contains(run.Message, "exceeded quota") {
			t.Errorf("slot %d: runs[0] = %+v, want the slot Failed/%s with the quota's message", i, run, ReasonJobRejected)
		}
		if len(sj.Status.Runs) != i+1 {
			t.Errorf("slot %d: %d runs, want one per slot: %+v", i, len(sj.Status.Runs), sj.Status.Runs)
		}
		ready := meta.FindStatusCondition(sj.Status.Conditions, ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonJobRejected || !strings.Contains(ready.Message, "exceeded quota") {
			t.Errorf("slot %d: Ready = %+v, want False/%s naming the quota", i, ready, ReasonJobRejected)
		}
		var rejected, missed int
		for _, e := range f.drainEvents() {
			rejected += strings.Count(e, ReasonJobRejected)
			missed += strings.Count(e, ReasonMissedSlots) + strings.Count(e, "FailedCreate")
		}
		if want := map[bool]int{true: 1, false: 0}[i == 0]; rejected != want || missed != 0 {
			t.Errorf("slot %d: %d %s and %d MissedSlots/FailedCreate Events, want %d and 0 (one Warning per distinct refusal)", i, rejected, ReasonJobRejected, missed, want)
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
	if ready := meta.FindStatusCondition(sj.Status.Conditions, ConditionReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready after the quota was lifted = %+v, want True", ready)
	}
}

func clientKey(o metav1.Object) client.ObjectKey {
	return client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}
}

// recordCreates is the record of a pass's creates, from the API server's answers alone.
func TestRecordCreates(t *testing.T) {
	quota := func(name string) string {
		return refusalMessage(name, fmt.Errorf(`jobs.batch %q is forbidden: exceeded quota: q, requested: count/jobs.batch=1, used: count/jobs.batch=0, limited: count/jobs.batch=0`, name))
	}
	slotCreation := func(slot time.Time) creation {
		sj := newSJ()
		return creation{job: newJob(sj, jobname.Slot(sj, slot), slot, time.UTC, ""), slot: &slot}
	}
	refusedAt := func(slot time.Time) createResult {
		c := slotCreation(slot)
		return createResult{creation: c, ev: event{corev1.EventTypeWarning, ReasonJobRejected, quota(c.job.Name)}}
	}
	createdAt := func(slot time.Time) createResult {
		c := slotCreation(slot)
		j := c.job.DeepCopy()
		j.UID = "new"
		return createResult{creation: c, got: j, ev: event{corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job " + j.Name}}
	}
	ready := func(p plan) *metav1.Condition { return meta.FindStatusCondition(p.status.Conditions, ConditionReady) }

	// A refusal: a Failed run with the message, the slot decided, Ready False, one Warning.
	sj := newSJ(lastSchedule(thePriorHour))
	p := decide(sj, nil, justAfterTheHour, noneDeleted, 0)
	p.events = nil
	recordCreates(sj, &p, []createResult{refusedAt(topOfTheHour)}, justAfterTheHour)
	if p.skipped != ReasonJobRejected || !p.status.LastSkippedTime.Time.Equal(topOfTheHour) || slotLedger(sj, &p.status, nil, topOfTheHour).Reason != ReasonJobRejected {
		t.Fatalf("skipped %q, lastSkippedTime %v, ledger %+v; want a refused, decided slot", p.skipped, p.status.LastSkippedTime, slotLedger(sj, &p.status, nil, topOfTheHour))
	}
	if r := p.status.Runs[0]; r.Result != v1alpha1.RunFailed || r.Reason != ReasonJobRejected || !strings.Contains(r.Message, "exceeded quota") || r.JobName != "" {
		t.Errorf("runs[0] = %+v, want Failed/JobRejected with the quota's message", r)
	}
	if c := ready(p); c.Status != metav1.ConditionFalse || c.Reason != ReasonJobRejected {
		t.Errorf("Ready = %+v, want False/JobRejected", c)
	}
	if got := reasons(p); !slices.Equal(got, []string{ReasonJobRejected}) {
		t.Errorf("events %v, want one JobRejected", got)
	}
	// The next slot refused the same way (its own Job name): recorded, no second Warning.
	sj.Status = p.status
	sj.Status.LastScheduleTime = ptr.To(metav1.NewTime(thePriorHour))
	next := topOfTheHour.Add(time.Hour)
	p = decide(sj, nil, next.Add(time.Second), noneDeleted, 0)
	p.events = nil
	recordCreates(sj, &p, []createResult{refusedAt(next)}, next)
	if got := reasons(p); len(got) != 0 || len(p.status.Runs) != 2 {
		t.Errorf("events %v and %d runs after the same refusal, want none and 2", got, len(p.status.Runs))
	}
	// A different refusal is said again.
	sj.Status = p.status
	later := next.Add(time.Hour)
	p = decide(sj, nil, later.Add(time.Second), noneDeleted, 0)
	p.events = nil
	other := refusedAt(later)
	other.ev.note = refusalMessage(other.job.Name, fmt.Errorf(`admission webhook "deny.example.com" denied the request: no`))
	recordCreates(sj, &p, []createResult{other}, later)
	if got := reasons(p); !slices.Equal(got, []string{ReasonJobRejected}) {
		t.Errorf("events %v after a different refusal, want one JobRejected", got)
	}
	// A create that succeeds: Ready True again, the slot recorded, the Job active.
	sj.Status = p.status
	last := later.Add(time.Hour)
	p = decide(sj, nil, last.Add(time.Second), noneDeleted, 0)
	p.events = nil
	recordCreates(sj, &p, []createResult{createdAt(last)}, last)
	if !p.status.LastScheduleTime.Time.Equal(last) || len(p.status.Active) != 1 || ready(p).Status != metav1.ConditionTrue {
		t.Errorf("lastScheduleTime %v, active %d, Ready %+v; want the slot recorded and Ready True", p.status.LastScheduleTime, len(p.status.Active), ready(p))
	}
}

func TestRefusalCauseLeavesOutTheJobName(t *testing.T) {
	a := refusalMessage("sj-1-abcde", fmt.Errorf(`jobs.batch "sj-1-abcde" is forbidden: exceeded quota`))
	b := refusalMessage("sj-2-abcde", fmt.Errorf(`jobs.batch "sj-2-abcde" is forbidden: exceeded quota`))
	if refusalCause(a) != refusalCause(b) || refusalCause(a) == refusalCause(refusalMessage("sj-1-abcde", fmt.Errorf("other"))) {
		t.Errorf("causes %q and %q", refusalCause(a), refusalCause(b))
	}
}

// refusalMessage is the message jobs.Create gives a Job refused at admission.
func refusalMessage(jobName string, err error) string {
	return jobstate.RefusalMessage(jobName, true, err)
}
