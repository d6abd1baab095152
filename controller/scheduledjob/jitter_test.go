package scheduledjob

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/slots"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

func TestJitterDelaysTheSlotNotItsIdentity(t *testing.T) {
	jittered := func(sj *v1alpha1.ScheduledJob) { sj.Spec.Jitter = &metav1.Duration{Duration: 10 * time.Minute} }
	sj := newSJ(lastSchedule(thePriorHour), jittered)
	off := slots.JitterOffset(sj)
	if off <= 0 || off >= 10*time.Minute {
		t.Fatalf("offset %s, want within (0, 10m) for this object", off)
	}
	before := decide(sj, nil, topOfTheHour.Add(off-time.Second), noneDeleted, 0)
	if len(before.creates) != 0 {
		t.Errorf("a Job was created %s after the slot, before its offset %s", off-time.Second, off)
	}
	if n := before.status.NextScheduleTime; n == nil || !n.Time.Equal(topOfTheHour.Add(off)) {
		t.Errorf("nextScheduleTime = %v, want the effective start %s", n, topOfTheHour.Add(off))
	}
	if before.requeueAfter != time.Second+schedule.Padding {
		t.Errorf("requeue after %s, want %s", before.requeueAfter, time.Second+schedule.Padding)
	}
	at := decide(sj, nil, topOfTheHour.Add(off), noneDeleted, 0)
	if len(at.creates) != 1 || at.creates[0].job.Name != jobname.Slot(sj, topOfTheHour) || !at.creates[0].slot.Equal(topOfTheHour) {
		t.Fatalf("creates at slot+offset = %+v, want one Job named for the slot", at.creates)
	}
	// startingDeadlineSeconds counts from the effective start.
	sj.Spec.StartingDeadlineSeconds = ptrInt64(30)
	if late := decide(sj, nil, topOfTheHour.Add(off+20*time.Second), noneDeleted, 0); len(late.creates) != 1 {
		t.Error("20 s after the effective start, within a 30 s deadline, no Job")
	}
	if late := decide(sj, nil, topOfTheHour.Add(off+40*time.Second), noneDeleted, 0); len(late.creates) != 0 {
		t.Error("40 s after the effective start, past a 30 s deadline, a Job was created")
	}
}

func ptrInt64(v int64) *int64 { return &v }

func TestSeveralSchedulesRunOncePerSharedMinute(t *testing.T) {
	several := func(sj *v1alpha1.ScheduledJob) {
		sj.Spec.Schedule, sj.Spec.Schedules = "", []string{"0 * * * *", "0 */2 * * *", "30 * * * *"}
	}
	sj := newSJ(lastSchedule(thePriorHour), several)
	at := decide(sj, nil, topOfTheHour, noneDeleted, 0) // 10:00: two schedules share it
	if len(at.creates) != 1 || at.creates[0].job.Name != jobname.Slot(sj, topOfTheHour) {
		t.Fatalf("creates at a shared minute = %d, want exactly one Job for the slot", len(at.creates))
	}
	if n := at.status.NextScheduleTime; n == nil || !n.Time.Equal(topOfTheHour.Add(30*time.Minute)) {
		t.Errorf("next = %v, want 10:30 (the third schedule)", n)
	}
	// The slot recorded, the next pass at 10:30 runs the third schedule's slot.
	sj.Status = at.status
	sj.Status.LastScheduleTime = &metav1.Time{Time: topOfTheHour}
	half := decide(sj, nil, topOfTheHour.Add(30*time.Minute), noneDeleted, 0)
	if len(half.creates) != 1 || !half.creates[0].slot.Equal(topOfTheHour.Add(30*time.Minute)) {
		t.Errorf("creates at 10:30 = %+v, want the 10:30 slot", half.creates)
	}
	bad := newSJ(func(sj *v1alpha1.ScheduledJob) {
		sj.Spec.Schedule, sj.Spec.Schedules = "", []string{"0 * * * *", "0 25 * * *"}
	})
	p := decide(bad, nil, topOfTheHour, noneDeleted, 0)
	if len(p.creates) != 0 || len(p.events) != 1 || !strings.Contains(p.events[0].note, "schedules[1]") {
		t.Errorf("a bad second schedule: creates %d, events %+v; want none and one event naming schedules[1]", len(p.creates), p.events)
	}
}
