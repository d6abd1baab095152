package at

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	om "github.com/platform-operators/platform-operators/controller/objectmetrics"
)

// ObjectMetrics are the Ats' per-object series, labelled namespace and name, for at most a
// limited number of Ats (objectmetrics.Store).
type ObjectMetrics struct{ *om.Collector }

// NewObjectMetrics creates the per-object series of at most limit Ats (0: none) and registers
// them with reg.
func NewObjectMetrics(reg prometheus.Registerer, limit int) (*ObjectMetrics, error) {
	c, err := om.NewCollector(reg, "At", limit,
		om.NewDesc("platform_operators_at_phase", "1 for the At's status.phase (Pending, Running, Succeeded, Failed); one series per At.", "phase"),
		om.NewDesc("platform_operators_at_scheduled_timestamp_seconds", "When the At runs or ran (status.scheduledTime, Unix time); absent until known."))
	if err != nil {
		return nil, err
	}
	return &ObjectMetrics{c}, nil
}

// observe records at's series from its status. A nil m records nothing.
func (m *ObjectMetrics) observe(at *v1alpha1.At) {
	if m != nil {
		phase := om.Sample{V: 1, OK: at.Status.Phase != "", Label: string(at.Status.Phase)}
		m.Set(types.NamespacedName{Namespace: at.Namespace, Name: at.Name}, []om.Sample{phase, om.Stamp(at.Status.ScheduledTime)})
	}
}

// forget drops the series of the At key (deleted). A nil m does nothing.
func (m *ObjectMetrics) forget(key types.NamespacedName) {
	if m != nil {
		m.Delete(key)
	}
}
