package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/platform-operators/platform-operators/controller/schedule"
)

func TestNextTableMarksDSTNights(t *testing.T) {
	cases := []struct {
		name, spec, tz, from string
		n                    int
		jitter               time.Duration
		want                 string
	}{
		{"a fixed local time on the spring-forward night is listed as not existing", "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 1, 0, `
SLOT (Europe/Berlin)                    UTC                    DST
Sun 2026-03-29 02:30 (does not exist)   -                      Skipped (clocks jump from 02:00 CET to 03:00 CEST: 02:30 does not run that night, nothing runs in its place)
Mon 2026-03-30 02:30 CEST               2026-03-30T00:30:00Z   -
`},
		{"a fixed local time in the repeated hour runs once", "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 1, 0, `
SLOT (Europe/Berlin)        UTC                    DST
Sun 2026-10-25 02:30 CEST   2026-10-25T00:30:00Z   RunsOnce (the clocks go back after it: the repeat at 02:30 CET (01:30Z) does not run)
`},
		{"an hourly schedule runs the repeated hour twice", "30 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", 2, 0, `
SLOT (Europe/Berlin)        UTC                    DST
Sun 2026-10-25 02:30 CEST   2026-10-25T00:30:00Z   RunsTwice (the clocks go back after it: it runs again at 02:30 CET (01:30Z))
Sun 2026-10-25 02:30 CET    2026-10-25T01:30:00Z   Repeat (second time this local time: it ran at 02:30 CEST (00:30Z))
`},
		{"several slots in the removed hour are counted", "*/20 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 1, 0, `
SLOT (Europe/Berlin)                    UTC                    DST
Sun 2026-03-29 02:00 (does not exist)   -                      Skipped (clocks jump from 02:00 CET to 03:00 CEST: 3 slots from 02:00 do not run that night, nothing runs in their place)
Mon 2026-03-30 02:00 CEST               2026-03-30T00:00:00Z   -
`},
		{"jitter adds the start column", "0 9 * * *", "America/New_York", "2026-06-01T00:00:00Z", 1, 90 * time.Second, `
SLOT (America/New_York)    UTC                    START (+1m30s)   DST
Mon 2026-06-01 09:00 EDT   2026-06-01T13:00:00Z   09:01:30         -
`},
		{"no time zone is UTC", "@daily", "", "2026-06-01T00:00:00Z", 1, 0, `
SLOT (UTC)                 UTC                    DST
Tue 2026-06-02 00:00 UTC   2026-06-02T00:00:00Z   -
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from, _ := time.Parse(time.RFC3339, tc.from)
			u, err := schedule.ParseAll([]string{tc.spec}, tc.tz, from)
			if err != nil {
				t.Fatal(err)
			}
			rep := nextReport{Schedules: []string{tc.spec}, TimeZone: tc.tz, Slots: nextSlots(u.Plan(from, tc.n), u.Location(), tc.jitter)}
			if tc.jitter > 0 {
				rep.Jitter = tc.jitter.String()
			}
			var b bytes.Buffer
			c := &cli{out: &b}
			if err := printReport(c, rep, nextTable); err != nil {
				t.Fatal(err)
			}
			if got, want := trimLines(b.String()), trimLines(tc.want); got != want {
				t.Errorf("table:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestNextJSONNamesTheDSTMark(t *testing.T) {
	from, _ := time.Parse(time.RFC3339, "2026-10-24T12:00:00Z")
	u, err := schedule.ParseAll([]string{"30 2 * * *"}, "Europe/Berlin", from)
	if err != nil {
		t.Fatal(err)
	}
	rep := nextReport{Schedules: []string{"30 2 * * *"}, TimeZone: "Europe/Berlin", Slots: nextSlots(u.Plan(from, 1), u.Location(), 0)}
	for _, format := range []string{"json", "yaml"} {
		var b bytes.Buffer
		c := &cli{out: &b, output: format}
		if err := printReport(c, rep, nil); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"2026-10-25T02:30:00+02:00", "2026-10-25T00:30:00Z", "RunsOnce"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("-o %s lacks %q:\n%s", format, want, b.String())
			}
		}
	}
}

// trimLines drops trailing spaces of each line and the surrounding blank lines.
func trimLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
