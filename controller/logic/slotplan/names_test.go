package slotplan

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/platform-operators/platform-operators/controller/logic/jobname"
)

// A slot whose Job was created under the name of 0.1.0 (<name>-<minutes>) just before an
// upgrade, and recorded after it, is recorded: the new name (with the owner's UID tag) must not
// run it a second time.
func TestASlotCreatedUnderTheOldNameIsNotRunAgain(t *testing.T) {
	sj := newSJ(lastSchedule(thePriorHour))
	old := childJob(topOfTheHour, running)
	old.Name = jobname.LegacySlot(sj.Name, topOfTheHour)
	p := Decide(sj, []*batchv1.Job{old}, justAfterTheHour, noneDeleted, 0)
	if len(p.Creates) > 0 {
		t.Fatalf("creates %v, want none: the slot's Job exists as %s", createdNames(p), old.Name)
	}
	if p.Status.LastScheduleTime == nil || !p.Status.LastScheduleTime.Time.Equal(topOfTheHour) {
		t.Errorf("lastScheduleTime = %v, want the slot %v recorded", p.Status.LastScheduleTime, topOfTheHour)
	}
}
