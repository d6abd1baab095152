package scheduledjob

import (
	"fmt"
	"strings"
	"testing"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
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
			sj := everyMinute("ns", "x")
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

// TestScheduleSummaryIsWrittenOnlyWhenItChanges: the SCHEDULE column is filled for schedule
// and schedules alike, and the field adds no status write to a pass that changes nothing.
func TestScheduleSummaryIsWrittenOnlyWhenItChanges(t *testing.T) {
	f := newFixture(t, false)
	c, ctx := f.env.Client, f.env.Ctx
	ns := f.env.Namespace(t, "sj-summary")
	one := everyMinute(ns, "one")
	one.Spec.Schedule = "0 3 * * *"
	many := everyMinute(ns, "many")
	many.Spec.Schedule, many.Spec.Schedules = "", []string{"0 3 * * *", "30 12 * * 1-5"}
	for sj, want := range map[*v1alpha1.ScheduledJob]string{one: "0 3 * * *", many: "0 3 * * * | 30 12 * * 1-5"} {
		f.create(t, sj)
		f.reconcile(t, sj)
		if sj.Status.ScheduleSummary != want {
			t.Errorf("%s: status.scheduleSummary = %q, want %q", sj.Name, sj.Status.ScheduleSummary, want)
		}
		rv := sj.ResourceVersion
		f.reconcile(t, sj)
		if sj.ResourceVersion != rv {
			t.Errorf("%s: a second pass with nothing changed wrote the object (resourceVersion %s -> %s)", sj.Name, rv, sj.ResourceVersion)
		}
	}
	// An edit of the schedules changes the summary in the next pass's one status write.
	many.Spec.Schedules = append(many.Spec.Schedules, "@weekly")
	if err := c.Update(ctx, many); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, many)
	if want := "0 3 * * * | 30 12 * * 1-5 | @weekly"; many.Status.ScheduleSummary != want {
		t.Errorf("after the edit: status.scheduleSummary = %q, want %q", many.Status.ScheduleSummary, want)
	}
	// An object written by an older manager (no summary) gets it once, then no more writes.
	many.Status.ScheduleSummary = ""
	if err := c.Status().Update(ctx, many); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, many)
	if !strings.HasPrefix(many.Status.ScheduleSummary, "0 3 * * *") {
		t.Errorf("an object without a summary did not get one: %q", many.Status.ScheduleSummary)
	}
	rv := many.ResourceVersion
	f.reconcile(t, many)
	if many.ResourceVersion != rv {
		t.Errorf("resourceVersion %s -> %s with nothing changed", rv, many.ResourceVersion)
	}
}
