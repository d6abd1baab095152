package slotplan

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

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// recordCreates is the record of a pass's creates, from the API server's answers alone.
func TestRecordCreates(t *testing.T) {
	quota := func(name string) string {
		return refusalMessage(name, fmt.Errorf(`jobs.batch %q is forbidden: exceeded quota: q, requested: count/jobs.batch=1, used: count/jobs.batch=0, limited: count/jobs.batch=0`, name))
	}
	slotCreation := func(slot time.Time) Creation {
		sj := newSJ()
		return Creation{Job: NewJob(sj, jobname.Slot(sj, slot), slot, time.UTC, ""), Slot: &slot}
	}
	refusedAt := func(slot time.Time) CreateResult {
		c := slotCreation(slot)
		return CreateResult{Creation: c, Ev: Event{corev1.EventTypeWarning, ReasonJobRejected, quota(c.Job.Name)}}
	}
	createdAt := func(slot time.Time) CreateResult {
		c := slotCreation(slot)
		j := c.Job.DeepCopy()
		j.UID = "new"
		return CreateResult{Creation: c, Got: j, Ev: Event{corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job " + j.Name}}
	}
	ready := func(p Plan) *metav1.Condition { return meta.FindStatusCondition(p.Status.Conditions, ConditionReady) }

	// A refusal: a Failed run with the message, the slot decided, Ready False, one Warning.
	sj := newSJ(lastSchedule(thePriorHour))
	p := Decide(sj, nil, justAfterTheHour, noneDeleted, 0)
	p.Events = nil
	RecordCreates(sj, &p, []CreateResult{refusedAt(topOfTheHour)}, justAfterTheHour)
	if p.Skipped != ReasonJobRejected || !p.Status.LastSkippedTime.Time.Equal(topOfTheHour) || slotLedger(sj, &p.Status, nil, topOfTheHour).Reason != ReasonJobRejected {
		t.Fatalf("skipped %q, lastSkippedTime %v, ledger %+v; want a refused, decided slot", p.Skipped, p.Status.LastSkippedTime, slotLedger(sj, &p.Status, nil, topOfTheHour))
	}
	if r := p.Status.Runs[0]; r.Result != v1alpha1.RunFailed || r.Reason != ReasonJobRejected || !strings.Contains(r.Message, "exceeded quota") || r.JobName != "" {
		t.Errorf("runs[0] = %+v, want Failed/JobRejected with the quota's message", r)
	}
	if c := ready(p); c.Status != metav1.ConditionFalse || c.Reason != ReasonJobRejected {
		t.Errorf("Ready = %+v, want False/JobRejected", c)
	}
	if got := reasons(p); !slices.Equal(got, []string{ReasonJobRejected}) {
		t.Errorf("events %v, want one JobRejected", got)
	}
	// The next slot refused the same way (its own Job name): recorded, no second Warning.
	sj.Status = p.Status
	sj.Status.LastScheduleTime = ptr.To(metav1.NewTime(thePriorHour))
	next := topOfTheHour.Add(time.Hour)
	p = Decide(sj, nil, next.Add(time.Second), noneDeleted, 0)
	p.Events = nil
	RecordCreates(sj, &p, []CreateResult{refusedAt(next)}, next)
	if got := reasons(p); len(got) != 0 || len(p.Status.Runs) != 2 {
		t.Errorf("events %v and %d runs after the same refusal, want none and 2", got, len(p.Status.Runs))
	}
	// A different refusal is said again.
	sj.Status = p.Status
	later := next.Add(time.Hour)
	p = Decide(sj, nil, later.Add(time.Second), noneDeleted, 0)
	p.Events = nil
	other := refusedAt(later)
	other.Ev.Note = refusalMessage(other.Job.Name, fmt.Errorf(`admission webhook "deny.example.com" denied the request: no`))
	RecordCreates(sj, &p, []CreateResult{other}, later)
	if got := reasons(p); !slices.Equal(got, []string{ReasonJobRejected}) {
		t.Errorf("events %v after a different refusal, want one JobRejected", got)
	}
	// A create that succeeds: Ready True again, the slot recorded, the Job active.
	sj.Status = p.Status
	last := later.Add(time.Hour)
	p = Decide(sj, nil, last.Add(time.Second), noneDeleted, 0)
	p.Events = nil
	RecordCreates(sj, &p, []CreateResult{createdAt(last)}, last)
	if !p.Status.LastScheduleTime.Time.Equal(last) || len(p.Status.Active) != 1 || ready(p).Status != metav1.ConditionTrue {
		t.Errorf("lastScheduleTime %v, active %d, Ready %+v; want the slot recorded and Ready True", p.Status.LastScheduleTime, len(p.Status.Active), ready(p))
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
