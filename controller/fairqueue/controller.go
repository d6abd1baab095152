package fairqueue

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ByNamespace is the lane of a request: its namespace ("" for a cluster-scoped object, one
// lane for all of them).
func ByNamespace(r reconcile.Request) string { return r.Namespace }

// NewQueue is a controller.Options.NewQueue: a fair queue over the requests' namespaces with
// the rate limiter controller-runtime chose, recording controller-runtime's workqueue metrics
// (workqueue_depth, workqueue_adds_total, ... labelled with the controller's name, as its own
// queues are; depth without a priority label).
func NewQueue(controllerName string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	// An error (p nil) only if controller-runtime renamed or re-described its workqueue metrics
	// (a test catches that on an upgrade): the queue works, without metrics.
	p, _ := controllerRuntimeMetrics()
	return New(controllerName, ByNamespace, Options[reconcile.Request]{RateLimiter: rl, MetricsProvider: p})
}

var controllerRuntimeMetrics = sync.OnceValues(func() (workqueue.MetricsProvider, error) {
	return PrometheusMetrics(crmetrics.Registry)
})

// PrometheusMetrics makes the workqueue metrics controller-runtime serves (its
// pkg/internal/metrics) in reg: where controller-runtime registered them already (it does in
// its metrics registry when its priority queue package is linked in), the registered ones, so
// this queue's series appear beside those of controller-runtime's own queues.
func PrometheusMetrics(reg prometheus.Registerer) (workqueue.MetricsProvider, error) {
	const sub = "workqueue"
	lbl := []string{"name", "controller"}
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	var p promProvider
	var errs []error
	p.depth = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "depth",
		Help: "Current depth of workqueue by workqueue and priority"}, []string{"name", "controller", "priority"}), &errs)
	p.adds = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "adds_total",
		Help: "Total number of adds handled by workqueue"}, lbl), &errs)
	p.latency = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: sub, Name: "queue_duration_seconds",
		Help: "How long in seconds an item stays in workqueue before being requested", Buckets: buckets,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 100, NativeHistogramMinResetDuration: time.Hour}, lbl), &errs)
	p.workDuration = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: sub, Name: "work_duration_seconds",
		Help: "How long in seconds processing an item from workqueue takes.", Buckets: buckets,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 100, NativeHistogramMinResetDuration: time.Hour}, lbl), &errs)
	p.unfinished = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "unfinished_work_seconds",
		Help: "How many seconds of work has been done that " +
			"is in progress and hasn't been observed by work_duration. Large " +
			"values indicate stuck threads. One can deduce the number of stuck " +
			"threads by observing the rate at which this increases."}, lbl), &errs)
	p.longest = register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: sub, Name: "longest_running_processor_seconds",
		Help: "How many seconds has the longest running " +
			"processor for workqueue been running."}, lbl), &errs)
	p.retries = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: sub, Name: "retries_total",
		Help: "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)"}, lbl), &errs)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("workqueue metrics: %w", err)
	}
	return p, nil
}

// register registers c in reg, or returns the collector already registered under the same
// description.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errs *[]error) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c
	case errors.As(err, &are):
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
		*errs = append(*errs, fmt.Errorf("%T registered as %T", c, are.ExistingCollector))
	default:
		*errs = append(*errs, err)
	}
	return c
}

type promProvider struct {
	depth                 *prometheus.GaugeVec
	adds, retries         *prometheus.CounterVec
	latency, workDuration *prometheus.HistogramVec
	unfinished, longest   *prometheus.GaugeVec
}

// The labels are those of controller-runtime's queues: name and controller both the
// controller's name; depth has no priority (controller-runtime's label for a queue without
// priorities): scheduledjob uses hundreds of them.
func (p promProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name, name, "")
}
func (p promProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name, name)
}
func (p promProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name, name)
}
func (p promProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.workDuration.WithLabelValues(name, name)
}
func (p promProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name, name)
}
func (p promProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longest.WithLabelValues(name, name)
}
func (p promProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name, name)
}
