package scheduledjob

import (
	"strings"
	"testing"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

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
