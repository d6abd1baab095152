package schedule

import (
	"testing"
	"time"
)

func TestPlanMarksDSTNights(t *testing.T) {
	type entry struct {
		at   string // the slot, or for Skipped the change, in UTC
		dst  DST
		twin string // "" none
		wall string
		n    int
	}
	cases := []struct {
		name, spec, tz, from string
		n                    int
		want                 []entry
	}{
		{"a fixed local time the spring-forward night removes is listed as skipped, then the next day's slot", "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2,
			[]entry{{"2026-03-29T01:00:00Z", DSTSkipped, "", "2026-03-29 02:30", 1}, {"2026-03-30T00:30:00Z", DSTNone, "", "", 0}, {"2026-03-31T00:30:00Z", DSTNone, "", "", 0}}},
		{"a fixed local time in the repeated hour runs once, its repeat named", "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2,
			[]entry{{"2026-10-25T00:30:00Z", DSTRunsOnce, "2026-10-25T01:30:00Z", "", 0}, {"2026-10-26T01:30:00Z", DSTNone, "", "", 0}}},
		{"an hourly schedule runs in both copies of the repeated hour", "30 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", 3,
			[]entry{{"2026-10-25T00:30:00Z", DSTRunsTwice, "2026-10-25T01:30:00Z", "", 0}, {"2026-10-25T01:30:00Z", DSTRepeat, "2026-10-25T00:30:00Z", "", 0}, {"2026-10-25T02:30:00Z", DSTNone, "", "", 0}}},
		{"every minute loses the sixty minutes of the removed hour", "* * * * *", "Europe/Berlin", "2026-03-29T00:58:00Z", 2,
			[]entry{{"2026-03-29T00:59:00Z", DSTNone, "", "", 0}, {"2026-03-29T01:00:00Z", DSTSkipped, "", "2026-03-29 02:00", 60}, {"2026-03-29T01:00:00Z", DSTNone, "", "", 0}}},
		{"a range of hours runs the hours around the removed one", "0 1-3 * * *", "Europe/Berlin", "2026-03-28T23:30:00Z", 2,
			[]entry{{"2026-03-29T00:00:00Z", DSTNone, "", "", 0}, {"2026-03-29T01:00:00Z", DSTSkipped, "", "2026-03-29 02:00", 1}, {"2026-03-29T01:00:00Z", DSTNone, "", "", 0}}},
		{"a US fall-back night repeats 01:30 once", "30 1 * * *", "America/New_York", "2026-11-01T00:00:00Z", 1,
			[]entry{{"2026-11-01T05:30:00Z", DSTRunsOnce, "2026-11-01T06:30:00Z", "", 0}}},
		{"a schedule outside the changed hours is not marked on a DST night", "0 9 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2,
			[]entry{{"2026-03-29T07:00:00Z", DSTNone, "", "", 0}, {"2026-03-30T07:00:00Z", DSTNone, "", "", 0}}},
		{"UTC has no DST nights", "30 2 * * *", "", "2026-03-28T12:00:00Z", 2,
			[]entry{{"2026-03-29T02:30:00Z", DSTNone, "", "", 0}, {"2026-03-30T02:30:00Z", DSTNone, "", "", 0}}},
		{"Lord Howe's 30-minute fall-back repeats half an hour", "45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00Z", 1,
			[]entry{{"2026-04-04T14:45:00Z", DSTRunsOnce, "2026-04-04T15:15:00Z", "", 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := ParseAll([]string{tc.spec}, tc.tz, mustTime(tc.from))
			if err != nil {
				t.Fatal(err)
			}
			got := u.Plan(mustTime(tc.from), tc.n)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d entries %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				twin := ""
				if !g.Twin.IsZero() {
					twin = g.Twin.UTC().Format(time.RFC3339)
				}
				if !g.At.Equal(mustTime(w.at)) || g.DST != w.dst || twin != w.twin || g.Wall != w.wall || g.Count != w.n {
					t.Errorf("entry %d = {%s %q twin %q wall %q count %d}, want %+v", i, g.At.UTC().Format(time.RFC3339), g.DST, twin, g.Wall, g.Count, w)
				}
			}
		})
	}
}

func TestPlanOfAUnionAndOfEvery(t *testing.T) {
	from := mustTime("2026-03-29T00:00:00Z")
	u, err := ParseAll([]string{"30 2 * * *", "45 2 * * *"}, "Europe/Berlin", from)
	if err != nil {
		t.Fatal(err)
	}
	got := u.Plan(from, 1)
	if len(got) != 2 || got[0].DST != DSTSkipped || got[0].Count != 2 || got[0].Wall != "2026-03-29 02:30" {
		t.Fatalf("a union names every skipped local time of its entries once: %+v", got)
	}
	every, err := ParseAll([]string{"@every 1h"}, "Europe/Berlin", from)
	if err != nil {
		t.Fatal(err)
	}
	got = every.Anchored(from).Plan(from, 3)
	for i, p := range got {
		if p.DST == DSTSkipped || !p.At.Equal(from.Add(time.Duration(i+1)*time.Hour)) {
			t.Fatalf("@every counts elapsed time and skips nothing: %+v", got)
		}
	}
	if n := len(u.Plan(from, 20000)); n > 10000+100 {
		t.Fatalf("Plan cuts n to 10,000 slots: %d entries", n)
	}
}
