package at

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/objectmetrics"
)

// objectValues are one At's per-object series.
type objectValues struct {
	phase     v1alpha1.AtPhase
	scheduled time.Time // zero: no series
}

// ObjectMetrics are the Ats' per-object series, labelled namespace and name, for at most a
// limited number of Ats (objectmetrics.Store).
type ObjectMetrics struct {
	store            *objectmetrics.Store[objectValues]
	phase, scheduled *prometheus.Desc
}

// NewObjectMetrics creates the per-object series of at most limit Ats (0: none) and registers
// them with reg.
func NewObjectMetrics(reg prometheus.Registerer, limit int) (*ObjectMetrics, error) {
	m := &ObjectMetrics{
		store: objectmetrics.NewStore[objectValues]("At", limit),
		phase: prometheus.NewDesc("platform_operators_at_phase",
			"1 for the At's status.phase (Pending, Running, Succeeded, Failed); one series per At.", []string{"namespace", "name", "phase"}, nil),
		scheduled: prometheus.NewDesc("platform_operators_at_scheduled_timestamp_seconds",
			"When the At runs or ran (status.scheduledTime, Unix time); absent until known.", []string{"namespace", "name"}, nil),
	}
	if err := reg.Register(m); err != nil {
		return nil, err
	}
	return m, nil
}

// Describe implements prometheus.Collector.
func (m *ObjectMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.phase
	ch <- m.scheduled
	m.store.DescribeUntracked(ch)
}

// Collect implements prometheus.Collector: the series of the Ats as last reconciled.
func (m *ObjectMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, e := range m.store.Snapshot() {
		ns, name, v := e.Key.Namespace, e.Key.Name, e.Values
		if v.phase != "" {
			ch <- prometheus.MustNewConstMetric(m.phase, prometheus.GaugeValue, 1, ns, name, string(v.phase))
		}
		if !v.scheduled.IsZero() {
			ch <- prometheus.MustNewConstMetric(m.scheduled, prometheus.GaugeValue, float64(v.scheduled.UnixMilli())/1e3, ns, name)
		}
	}
	m.store.CollectUntracked(ch)
}

// observe records at's series from its status. A nil m records nothing.
func (m *ObjectMetrics) observe(at *v1alpha1.At) {
	if m == nil {
		return
	}
	v := objectValues{phase: at.Status.Phase}
	if at.Status.ScheduledTime != nil {
		v.scheduled = at.Status.ScheduledTime.Time
	}
	m.store.Set(types.NamespacedName{Namespace: at.Namespace, Name: at.Name}, v)
}

// forget drops the series of the At key (deleted). A nil m does nothing.
func (m *ObjectMetrics) forget(key types.NamespacedName) {
	if m != nil {
		m.store.Delete(key)
	}
}
