package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestBetween(t *testing.T) {
	at := func(d, h, m int) time.Time { return time.Date(2026, 11, d, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name     string
		specs    []string
		zone     string
		from, to time.Time
		limit    int
		want     string // slots as 02 15:04 in UTC, comma separated
		more     bool
	}{
		{name: "from is inclusive and to exclusive", specs: []string{"*/10 * * * *"}, from: at(24, 10, 0), to: at(24, 10, 30), limit: 100,
			want: "24 10:00,24 10:10,24 10:20"},
		{name: "a from inside a minute starts at the next slot", specs: []string{"*/10 * * * *"}, from: at(24, 10, 0).Add(500 * time.Millisecond), to: at(24, 10, 21), limit: 100,
			want: "24 10:10,24 10:20"},
		{name: "more slots than the limit says so", specs: []string{"* * * * *"}, from: at(24, 10, 0), to: at(24, 11, 0), limit: 3,
			want: "24 10:00,24 10:01,24 10:02", more: true},
		{name: "exactly the limit is not more", specs: []string{"* * * * *"}, from: at(24, 10, 0), to: at(24, 10, 3), limit: 3,
			want: "24 10:00,24 10:01,24 10:02"},
		{name: "a range with no slot is empty", specs: []string{"0 9 * * *"}, from: at(24, 10, 0), to: at(25, 9, 0), limit: 100},
		{name: "an empty or reversed range is empty", specs: []string{"* * * * *"}, from: at(24, 10, 0), to: at(24, 10, 0), limit: 100},
		{name: "the slots of several schedules, a shared one once", specs: []string{"0 9 * * *", "0 9,12 * * *"}, from: at(24, 0, 0), to: at(25, 12, 0), limit: 100,
			want: "24 09:00,24 12:00,25 09:00"},
		{name: "slots in the schedule's time zone", specs: []string{"0 2 * * *"}, zone: "Europe/Berlin", from: at(24, 0, 0), to: at(26, 0, 0), limit: 100,
			want: "24 01:00,25 01:00"},
		{name: "no limit, no slot", specs: []string{"* * * * *"}, from: at(24, 10, 0), to: at(24, 11, 0), limit: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := ParseAll(tc.specs, tc.zone, tc.from)
			if err != nil {
				t.Fatal(err)
			}
			slots, more := u.Between(tc.from, tc.to, tc.limit)
			var got []string
			for _, s := range slots {
				got = append(got, s.UTC().Format("02 15:04"))
			}
			if strings.Join(got, ",") != tc.want || more != tc.more {
				t.Errorf("Between = %v, more %v; want %q, more %v", got, more, tc.want, tc.more)
			}
		})
	}
}
