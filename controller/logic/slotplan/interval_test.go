package slotplan

import (
	"testing"
	"time"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// The schedule's period, from which the no-success alert's default threshold counts, is the gap
// from the next slot to the one after it; none while suspended or when the schedule is invalid.
func TestTheIntervalIsTheSchedulesPeriodAtTheNextSlot(t *testing.T) {
	for _, tc := range []struct {
		name string
		sj   *v1alpha1.ScheduledJob
		want time.Duration
	}{
		{"hourly", newSJ(), time.Hour},
		{"nightly", newSJ(spec("0 2 * * *")), 24 * time.Hour},
		{"weekly on Mondays", newSJ(spec("0 2 * * 1")), 7 * 24 * time.Hour},
		// 2016-05-19 is a Thursday: the next slot is Friday's, the one after it Monday's.
		{"weekdays, next slot on a Friday", newSJ(spec("0 2 * * 1-5")), 3 * 24 * time.Hour},
		{"suspended", newSJ(suspended), 0},
		{"an invalid time zone", newSJ(timeZone("Mars/Olympus")), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.sj, nil, justAfterTheHour.Add(15*time.Hour), noneDeleted, 0).Interval; got != tc.want {
				t.Errorf("interval = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNoSuccessAfterReadsTheAnnotation(t *testing.T) {
	for value, want := range map[string]time.Duration{"26h": 26 * time.Hour, "90m": 90 * time.Minute, "": 0, "a day": 0, "-1h": 0, "0s": 0} {
		sj := newSJ()
		sj.Annotations = map[string]string{keys.AnnotationAlertNoSuccessAfter: value}
		if got := NoSuccessAfter(sj); got != want {
			t.Errorf("NoSuccessAfter(%q) = %v, want %v", value, got, want)
		}
	}
}
