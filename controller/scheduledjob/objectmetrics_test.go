package scheduledjob

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
)

// series gathers reg and returns the value of every sample whose name starts with prefix, keyed
// "<name>{<label values joined by />}", the labels sorted by name.
func series(t *testing.T, reg *prometheus.Registry, prefix string) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, fam := range fams {
		if !strings.HasPrefix(fam.GetName(), prefix) {
			continue
		}
		for _, m := range fam.GetMetric() {
			var vals []string
			for _, l := range m.GetLabel() {
				vals = append(vals, l.GetValue())
			}
			out[fmt.Sprintf("%s{%s}", fam.GetName(), strings.Join(vals, "/"))] = m.GetGauge().GetValue()
		}
	}
	return out
}

func unix(t time.Time) float64 { return float64(t.UnixMilli()) / 1e3 }

// TestObjectMetrics runs the reconciler against a real API server and reads the per-object
// series as a scrape does: they appear with the first pass, follow the status (a run starting,
// succeeding), end when the ScheduledJob is deleted, and exist for at most the limit's number of
// ScheduledJobs, the others counted.
func TestObjectMetrics(t *testing.T) {
	f := newFixture(t, false)
	c, ctx := f.env.Client, f.env.Ctx
	reg := prometheus.NewRegistry()
	objects, err := NewObjectMetrics(reg, 2)
	if err != nil {
		t.Fatal(err)
	}
	f.rec.Objects = objects
	ns := f.env.Namespace(t, "sj-objmetrics")
	const p = "platform_operators_scheduledjob_"
	// Gather sorts labels by name: "name" before "namespace".
	key := func(metric, name string) string { return p + metric + "{" + name + "/" + ns + "}" }
	untracked := "platform_operators_object_metrics_untracked_objects{ScheduledJob}"

	nightly := everyMinute(ns, "nightly")
	nightly.Annotations = map[string]string{keys.AnnotationAlertNoSuccessAfter: "26h"}
	f.create(t, nightly)
	f.reconcile(t, nightly)
	got := series(t, reg, "platform_operators_")
	want := map[string]float64{
		key("created_timestamp_seconds", "nightly"):       unix(nightly.CreationTimestamp.Time),
		key("next_schedule_timestamp_seconds", "nightly"): unix(nightly.Status.NextScheduleTime.Time),
		key("schedule_interval_seconds", "nightly"):       60,
		key("active_runs", "nightly"):                     0,
		key("suspended", "nightly"):                       0,
		key("stopped_after_failures", "nightly"):          0,
		key("no_success_alert_after_seconds", "nightly"):  26 * 3600,
		untracked: 0,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the first pass:\n got %v\nwant %v", got, want)
	}

	// A slot: its Job is created and recorded; the run is active.
	slot := f.nextMinute()
	f.slotPasses(t, nightly)
	got = series(t, reg, p)
	if got[key("last_schedule_timestamp_seconds", "nightly")] != unix(slot) || got[key("active_runs", "nightly")] != 1 ||
		got[key("next_schedule_timestamp_seconds", "nightly")] != unix(slot.Add(time.Minute)) {
		t.Fatalf("after the slot %v: %v", slot, got)
	}
	if _, ok := got[key("last_successful_timestamp_seconds", "nightly")]; ok {
		t.Errorf("last success reported before any run succeeded: %v", got)
	}
	// The run succeeds.
	for _, j := range f.jobsOf(t, nightly) {
		if j.Name == jobname.Slot(nightly, slot) {
			if err := testenv.Finish(ctx, c, &j, true, slot, slot.Add(3*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.waitJobsCached(t, nightly)
	f.reconcile(t, nightly)
	got = series(t, reg, p)
	if got[key("last_successful_timestamp_seconds", "nightly")] != unix(slot.Add(3*time.Second)) || got[key("active_runs", "nightly")] != 0 {
		t.Fatalf("after the run succeeded: %v", got)
	}

	// The limit: two ScheduledJobs have series, the third is counted.
	paused := everyMinute(ns, "paused")
	paused.Spec.Suspend = ptr.To(true)
	third := everyMinute(ns, "third")
	for _, sj := range []*v1alpha1.ScheduledJob{paused, third} {
		if err := c.Create(ctx, sj); err != nil {
			t.Fatal(err)
		}
		f.reconcile(t, sj)
	}
	got = series(t, reg, "platform_operators_")
	if got[key("suspended", "paused")] != 1 || got[untracked] != 1 {
		t.Errorf("with the limit reached: suspended{paused} = %v, untracked = %v; want 1, 1", got[key("suspended", "paused")], got[untracked])
	}
	for k := range got {
		if strings.Contains(k, "{third/") {
			t.Errorf("a series of the ScheduledJob beyond the limit: %s", k)
		}
		if _, has := got[k]; has && strings.Contains(k, "next_schedule") && strings.Contains(k, "{paused/") {
			t.Errorf("a next run of a suspended ScheduledJob: %s", k)
		}
	}
	if n := len(got); n != 14 {
		t.Errorf("%d series, want 14 (9 of nightly, 4 of the suspended paused, 1 count): %v", n, got)
	}

	// Deleting a ScheduledJob ends its series; the one beyond the limit takes its place at its
	// next pass.
	if err := c.Delete(ctx, nightly); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cache sees the deletion", func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(nightly), &v1alpha1.ScheduledJob{}) != nil
	})
	if _, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "nightly"}}); err != nil {
		t.Fatal(err)
	}
	got = series(t, reg, p)
	for k := range got {
		if strings.Contains(k, "{nightly/") {
			t.Errorf("a series of the deleted ScheduledJob: %s", k)
		}
	}
	f.reconcile(t, third)
	got = series(t, reg, "platform_operators_")
	if got[untracked] != 0 {
		t.Errorf("after a deletion freed a place: %v", got)
	}
	if _, ok := got[key("active_runs", "third")]; !ok {
		t.Errorf("the ScheduledJob that was beyond the limit has no series after a place was freed: %v", got)
	}
}
