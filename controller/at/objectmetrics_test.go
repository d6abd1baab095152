package at

import (
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// atSeries gathers reg and returns its samples as "<name>{<label=value,...>} <value>", sorted.
func atSeries(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out = append(out, fam.GetName()+"{"+strings.Join(ls, ",")+"} "+strconv.FormatFloat(m.GetGauge().GetValue(), 'f', -1, 64))
		}
	}
	sort.Strings(out)
	return out
}

// TestObjectMetrics runs the reconciler against a real API server: an At's phase series follows
// its status (Pending, Running, Succeeded, one series at a time), ends when the At is deleted,
// and only the limit's number of Ats have series.
func TestObjectMetrics(t *testing.T) {
	f := newFixture(t, false)
	c, ctx := f.env.Client, f.env.Ctx
	reg := prometheus.NewRegistry()
	objects, err := NewObjectMetrics(reg, 1)
	if err != nil {
		t.Fatal(err)
	}
	f.rec.Objects = objects
	ns := f.env.Namespace(t, "at-objmetrics")
	when := f.clock.Now().Add(time.Minute).Truncate(time.Second)
	stamp := strconv.FormatInt(when.Unix(), 10)
	at := commandAt(ns, "once", when)
	if err := c.Create(ctx, at); err != nil {
		t.Fatal(err)
	}
	check := func(phase string, extra ...string) {
		t.Helper()
		want := append([]string{
			"platform_operators_at_phase{name=once,namespace=" + ns + ",phase=" + phase + "} 1",
			"platform_operators_at_scheduled_timestamp_seconds{name=once,namespace=" + ns + "} " + stamp,
		}, extra...)
		sort.Strings(want)
		if got := atSeries(t, reg); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("phase %s:\n got %q\nwant %q", phase, got, want)
		}
	}
	untracked := func(n string) string { return "platform_operators_object_metrics_untracked_objects{kind=At} " + n }

	f.reconcile(t, at)
	check("Pending", untracked("0"))
	f.clock.SetTime(when)
	f.reconcile(t, at)
	check("Running", untracked("0"))
	job := f.jobsOf(t, at)[0]
	if err := testenv.Finish(ctx, c, &job, true, when, when.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	testenv.WaitCacheCurrent(t, f.env, &job)
	f.reconcile(t, at)
	check("Succeeded", untracked("0"))

	// A second At is beyond the limit of 1: counted, no series.
	other := commandAt(ns, "other", when.Add(time.Hour))
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t, other)
	check("Succeeded", untracked("1"))

	// Deleted: its series end; the other takes the place at its next pass.
	if err := c.Delete(ctx, at); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the cache sees the deletion", func() bool {
		return c.Get(ctx, client.ObjectKeyFromObject(at), &v1alpha1.At{}) != nil
	})
	if _, err := f.rec.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "once"}}); err != nil {
		t.Fatal(err)
	}
	if got := atSeries(t, reg); len(got) != 1 || got[0] != untracked("1") {
		t.Errorf("after the deletion: %q, want only the count", got)
	}
	f.reconcile(t, other)
	if got := atSeries(t, reg); len(got) != 3 || !strings.Contains(got[0], "name=other") {
		t.Errorf("after the other's pass: %q, want its series", got)
	}
}
