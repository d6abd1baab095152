package scheduledjob

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
	"github.com/platform-operators/platform-operators/controller/objectmetrics"
)

// objectValues are one ScheduledJob's per-object series, from its status as written (or about to
// be: a slot's Job just created).
type objectValues struct {
	created, lastSchedule, lastSuccess, next time.Time // zero: no series
	active                                   int
	// interval is the schedule's period at the next slot (0: no series).
	interval  time.Duration
	suspended bool
	// stoppedAfterFailures: Ready says StoppedAfterFailures (spec.stopStrategy suspended it).
	stoppedAfterFailures bool
	// noSuccessAfter is keys.AnnotationAlertNoSuccessAfter, parsed; 0: not set (no series).
	noSuccessAfter time.Duration
}

// ObjectMetrics are the ScheduledJobs' per-object series, labelled namespace and name, for at
// most a limited number of ScheduledJobs (objectmetrics.Store): a tenant's 100,000 ScheduledJobs
// cost names in a map, not series.
type ObjectMetrics struct {
	store *objectmetrics.Store[objectValues]

	created, lastSchedule, lastSuccess, next, interval, active, suspended, stopped, noSuccessAfter *prometheus.Desc
}

// NewObjectMetrics creates the per-object series of at most limit ScheduledJobs (0: none) and
// registers them with reg.
func NewObjectMetrics(reg prometheus.Registerer, limit int) (*ObjectMetrics, error) {
	labels := []string{"namespace", "name"}
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("platform_operators_scheduledjob_"+name, help, labels, nil)
	}
	m := &ObjectMetrics{
		store:          objectmetrics.NewStore[objectValues]("ScheduledJob", limit),
		created:        d("created_timestamp_seconds", "When the ScheduledJob was created (Unix time): where the no-success alert starts counting before a first success."),
		lastSchedule:   d("last_schedule_timestamp_seconds", "The slot of the ScheduledJob's last scheduled run that got a Job (status.lastScheduleTime, Unix time); absent before the first."),
		lastSuccess:    d("last_successful_timestamp_seconds", "When the ScheduledJob's last Job succeeded (status.lastSuccessfulTime, Unix time); absent before the first success."),
		next:           d("next_schedule_timestamp_seconds", "When the ScheduledJob's next slot starts (status.nextScheduleTime, Unix time); absent while suspended or when the schedule is invalid."),
		interval:       d("schedule_interval_seconds", "Seconds from the ScheduledJob's next slot to the one after it: the schedule's period, from which the no-success alert's default threshold counts; absent while suspended or when the schedule is invalid."),
		active:         d("active_runs", "The ScheduledJob's Jobs that have not finished (status.active)."),
		suspended:      d("suspended", "1 while the ScheduledJob is suspended (spec.suspend), else 0."),
		stopped:        d("stopped_after_failures", "1 while the ScheduledJob is suspended by its spec.stopStrategy.afterFailures (Ready reason StoppedAfterFailures), else 0: the no-success alert is silent while suspended, this one is not."),
		noSuccessAfter: d("no_success_alert_after_seconds", "The ScheduledJob's own threshold of the no-success alert (annotation "+keys.AnnotationAlertNoSuccessAfter+"); absent when not set."),
	}
	if err := reg.Register(m); err != nil {
		return nil, err
	}
	return m, nil
}

// Describe implements prometheus.Collector.
func (m *ObjectMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.created, m.lastSchedule, m.lastSuccess, m.next, m.interval, m.active, m.suspended, m.stopped, m.noSuccessAfter} {
		ch <- d
	}
	m.store.DescribeUntracked(ch)
}

// Collect implements prometheus.Collector: the series of the ScheduledJobs as last reconciled.
func (m *ObjectMetrics) Collect(ch chan<- prometheus.Metric) {
	stamp := func(d *prometheus.Desc, t time.Time, ns, name string) {
		if !t.IsZero() {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(t.UnixMilli())/1e3, ns, name)
		}
	}
	for _, e := range m.store.Snapshot() {
		ns, name, v := e.Key.Namespace, e.Key.Name, e.Values
		stamp(m.created, v.created, ns, name)
		stamp(m.lastSchedule, v.lastSchedule, ns, name)
		stamp(m.lastSuccess, v.lastSuccess, ns, name)
		stamp(m.next, v.next, ns, name)
		if v.interval > 0 {
			ch <- prometheus.MustNewConstMetric(m.interval, prometheus.GaugeValue, v.interval.Seconds(), ns, name)
		}
		ch <- prometheus.MustNewConstMetric(m.active, prometheus.GaugeValue, float64(v.active), ns, name)
		suspended := 0.0
		if v.suspended {
			suspended = 1
		}
		ch <- prometheus.MustNewConstMetric(m.suspended, prometheus.GaugeValue, suspended, ns, name)
		stopped := 0.0
		if v.stoppedAfterFailures {
			stopped = 1
		}
		ch <- prometheus.MustNewConstMetric(m.stopped, prometheus.GaugeValue, stopped, ns, name)
		if v.noSuccessAfter > 0 {
			ch <- prometheus.MustNewConstMetric(m.noSuccessAfter, prometheus.GaugeValue, v.noSuccessAfter.Seconds(), ns, name)
		}
	}
	m.store.CollectUntracked(ch)
}

// observe records sj's series from st, the status it has (or is about to have), and interval,
// the schedule's period at the next slot. A nil m records nothing.
func (m *ObjectMetrics) observe(sj *v1alpha1.ScheduledJob, st *v1alpha1.ScheduledJobStatus, interval time.Duration) {
	if m == nil {
		return
	}
	v := objectValues{
		created:        sj.CreationTimestamp.Time,
		active:         max(len(st.Active), int(st.ActiveCount)),
		interval:       interval,
		suspended:      ptr.Deref(sj.Spec.Suspend, false) || st.Stop != nil,
		noSuccessAfter: slotplan.NoSuccessAfter(sj),
	}
	v.stoppedAfterFailures = st.Stop != nil && st.Stop.Reason == slotplan.ReasonStoppedAfterFailures
	if st.LastScheduleTime != nil {
		v.lastSchedule = st.LastScheduleTime.Time
	}
	if st.LastSuccessfulTime != nil {
		v.lastSuccess = st.LastSuccessfulTime.Time
	}
	if st.NextScheduleTime != nil {
		v.next = st.NextScheduleTime.Time
	}
	m.store.Set(types.NamespacedName{Namespace: sj.Namespace, Name: sj.Name}, v)
}

// forget drops the series of the ScheduledJob key (deleted). A nil m does nothing.
func (m *ObjectMetrics) forget(key types.NamespacedName) {
	if m != nil {
		m.store.Delete(key)
	}
}
