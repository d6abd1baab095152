package secretsync

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the SecretSync controller's series. Reconcile latency and errors come from
// controller-runtime (controller_runtime_reconcile_time_seconds{controller="secretsync"}).
type Metrics struct {
	// Writes counts API writes by SecretSync and operation (create, update, replace, delete, release, serviceaccount).
	Writes *prometheus.CounterVec
	// Failures counts failed writes by SecretSync.
	Failures *prometheus.CounterVec
	// Conflicts is the current number of targets held by a Secret we may not touch.
	Conflicts *prometheus.GaugeVec
	// Desired and Synced are the current numbers of wanted and in-step copies.
	Desired, Synced *prometheus.GaugeVec
	// Planned counts the copies passes planned (one ownership proof and one comparison each),
	// by SecretSync and pass: "whole" (every target namespace) or "namespace" (one, after a
	// namespace, ServiceAccount or copy event). The work the controller does, as events cost it.
	Planned *prometheus.CounterVec
}

// NewMetrics creates the series and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_operators_secretsync_writes_total",
			Help: "API writes made by the SecretSync controller, by SecretSync and operation.",
		}, []string{"secretsync", "op"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_operators_secretsync_write_failures_total",
			Help: "Failed API writes of the SecretSync controller, by SecretSync.",
		}, []string{"secretsync"}),
		Conflicts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "platform_operators_secretsync_conflicts",
			Help: "Targets whose name is taken by a Secret the SecretSync may not manage.",
		}, []string{"secretsync"}),
		Desired: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "platform_operators_secretsync_copies_desired",
			Help: "Copies a SecretSync wants (sources x target namespaces).",
		}, []string{"secretsync"}),
		Synced: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "platform_operators_secretsync_copies_synced",
			Help: "Copies in step with their source.",
		}, []string{"secretsync"}),
		Planned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_operators_secretsync_copies_planned_total",
			Help: "Copies planned by SecretSync passes (one ownership proof and comparison each), by SecretSync and pass (whole or namespace).",
		}, []string{"secretsync", "pass"}),
	}
	for _, c := range []prometheus.Collector{m.Writes, m.Failures, m.Conflicts, m.Desired, m.Synced, m.Planned} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering SecretSync metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) forget(name string) {
	for _, g := range []*prometheus.GaugeVec{m.Conflicts, m.Desired, m.Synced} {
		g.DeleteLabelValues(name)
	}
}
