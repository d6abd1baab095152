package slotplan

import (
	"fmt"
	"testing"
)

func TestScheduleSummary(t *testing.T) {
	long := make([]string, 16)
	for i := range long {
		long[i] = fmt.Sprintf("%d 0-23/2 1-31 * MON-FRI", i)
	}
	cases := []struct {
		name      string
		schedule  string
		schedules []string
		want      string
	}{
		{name: "one schedule is shown as written", schedule: "*/5 * * * *", want: "*/5 * * * *"},
		{name: "a descriptor is shown as written", schedule: "@every 90m", want: "@every 90m"},
		{name: "blanks around a schedule are dropped", schedule: "  0 3 * * *\t", want: "0 3 * * *"},
		{name: "one entry of schedules is shown alone", schedules: []string{"0 3 * * *"}, want: "0 3 * * *"},
		{name: "several schedules are joined", schedules: []string{"0 3 * * *", " 30 12 * * 1-5", "@weekly"}, want: "0 3 * * * | 30 12 * * 1-5 | @weekly"},
		{name: "sixteen schedules become the first and a count", schedules: long, want: "0 0-23/2 1-31 * MON-FRI (+15 more)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sj := newSJ()
			sj.Spec.Schedule, sj.Spec.Schedules = tc.schedule, tc.schedules
			got := ScheduleSummary(sj)
			if got != tc.want {
				t.Errorf("ScheduleSummary = %q, want %q", got, tc.want)
			}
			if len(got) > 160 {
				t.Errorf("%d characters, over the CRD's maxLength 160", len(got))
			}
		})
	}
}
