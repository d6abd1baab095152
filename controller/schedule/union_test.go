package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestUnion(t *testing.T) {
	from := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	u, err := ParseAll([]string{"0 9 * * 1-5", "0 9,12 * * *", "30 12 * * *"}, "", from)
	if err != nil {
		t.Fatal(err)
	}
	// Tuesday 2026-11-24: 09:00 (shared by the first two: once), 12:00, 12:30, then 09:00 next day.
	var got []string
	for t1 := u.Next(from); len(got) < 4; t1 = u.Next(t1) {
		got = append(got, t1.Format("02 15:04"))
	}
	if strings.Join(got, ",") != "24 09:00,24 12:00,24 12:30,25 09:00" {
		t.Errorf("slots = %v", got)
	}
	now := time.Date(2026, 11, 24, 12, 40, 0, 0, time.UTC)
	recent, missed := u.MostRecent(time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC), now)
	if recent == nil || recent.Format("15:04") != "12:30" || missed != FewMissed {
		t.Errorf("MostRecent = %v, %v; want 12:30 with 12:00 missed", recent, missed)
	}
	recent, missed = u.MostRecent(time.Date(2026, 11, 24, 12, 10, 0, 0, time.UTC), now)
	if recent == nil || recent.Format("15:04") != "12:30" || missed != NoneMissed {
		t.Errorf("MostRecent = %v, %v; want 12:30, none missed", recent, missed)
	}
	if d, next, ok := u.RequeueAfter(now, now); !ok || next.Format("02 15:04") != "25 09:00" || d != next.Sub(now)+Padding {
		t.Errorf("RequeueAfter = %v %v %v", d, next, ok)
	}
	if _, err := ParseAll([]string{"0 9 * * *", "61 * * * *"}, "", from); err == nil || !strings.Contains(err.Error(), "schedules[1]") {
		t.Errorf("a bad second schedule: err = %v, want it named schedules[1]", err)
	}
	if _, err := ParseAll(nil, "", from); err == nil {
		t.Error("no schedule accepted")
	}
}
