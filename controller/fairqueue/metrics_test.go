package fairqueue

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// controller-runtime registered its workqueue metrics in its registry when its priority queue
// package was linked in: PrometheusMetrics must find them there (same names, help and labels),
// or NewQueue's queues would run without metrics. Fails when an upgrade re-describes them.
func TestPrometheusMetricsAreControllerRuntimes(t *testing.T) {
	if _, err := PrometheusMetrics(crmetrics.Registry); err != nil {
		t.Fatalf("controller-runtime's workqueue metrics not found as registered: %v", err)
	}
}

func TestTheQueueRecordsTheWorkqueueMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := PrometheusMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	q, c := newTestQueue(t, Options[string]{MetricsProvider: p})
	q.Add("a/1")
	q.Add("a/1")
	q.Add("b/1")
	q.AddAfter("c/1", 1e9)
	k, _ := q.Get()
	step(t, q, c, 0, 0)
	q.Done(k)
	want := `
# HELP workqueue_adds_total Total number of adds handled by workqueue
# TYPE workqueue_adds_total counter
workqueue_adds_total{controller="test",name="test"} 2
# HELP workqueue_depth Current depth of workqueue by workqueue and priority
# TYPE workqueue_depth gauge
workqueue_depth{controller="test",name="test",priority=""} 1
# HELP workqueue_retries_total Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)
# TYPE workqueue_retries_total counter
workqueue_retries_total{controller="test",name="test"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "workqueue_adds_total", "workqueue_depth", "workqueue_retries_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "workqueue_work_duration_seconds"); n != 1 {
		t.Errorf("%d work duration series, want 1", n)
	}
}
