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

// An @every entry is a grid from its anchor (the ScheduledJob's observedScheduleTime): next to a
// more frequent entry it still fires, and alone it is the schedule upstream's @every is.
func TestUnionEveryIsAGridFromItsAnchor(t *testing.T) {
	anchor := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	u, err := ParseAll([]string{"*/5 * * * *", "@every 61m"}, "", anchor)
	if err != nil {
		t.Fatal(err)
	}
	u = u.Anchored(anchor.Add(999 * time.Millisecond)) // a status time read before it was stored
	at := func(h, m int) time.Time { return time.Date(2026, 11, 24, h, m, 0, 0, time.UTC) }
	var got []string
	for t1 := u.Next(at(10, 55)); t1.Before(at(12, 5)); t1 = u.Next(t1) {
		got = append(got, t1.Format("15:04"))
	}
	if want := "11:00,11:01,11:05,11:10,11:15,11:20,11:25,11:30,11:35,11:40,11:45,11:50,11:55,12:00,12:02"; strings.Join(got, ",") != want {
		t.Errorf("slots = %v, want %s", got, want)
	}
	// The last slot was 11:00 (of */5): the @every slot after it is due.
	if recent, _ := u.MostRecent(at(11, 0), at(11, 1).Add(time.Second)); recent == nil || !recent.Equal(at(11, 1)) {
		t.Errorf("MostRecent after 11:00 at 11:01:01 = %v, want 11:01", recent)
	}
	if _, next, _ := u.RequeueAfter(at(11, 55), at(11, 59)); !next.Equal(at(12, 0)) {
		t.Errorf("next = %v, want 12:00", next)
	}
	// Alone, a week late: the most recent slot of the grid, many missed.
	every, err := Parse("@every 1h", "", anchor)
	if err != nil {
		t.Fatal(err)
	}
	every = every.Anchored(anchor)
	if recent, missed := every.MostRecent(anchor, anchor.Add(7*24*time.Hour+30*time.Minute)); recent == nil || !recent.Equal(anchor.Add(7*24*time.Hour)) || missed != ManyMissed {
		t.Errorf("MostRecent a week late = %v, %v; want the slot a week after the anchor, many missed", recent, missed)
	}
}
