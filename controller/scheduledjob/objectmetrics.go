package scheduledjob

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
	om "github.com/platform-operators/platform-operators/controller/objectmetrics"
)

// ObjectMetrics are the ScheduledJobs' per-object series, labelled namespace and name, for at
// most a limited number of ScheduledJobs (objectmetrics.Store): a tenant's 100,000 ScheduledJobs
// cost names in a map, not series.
type ObjectMetrics struct{ *om.Collector }

// NewObjectMetrics creates the per-object series of at most limit ScheduledJobs (0: none) and
// registers them with reg. observe gives their samples in this order.
func NewObjectMetrics(reg prometheus.Registerer, limit int) (*ObjectMetrics, error) {
	d := func(name, help string) *prometheus.Desc {
		return om.NewDesc("platform_operators_scheduledjob_"+name, help)
	}
	c, err := om.NewCollector(reg, "ScheduledJob", limit,
		d("created_timestamp_seconds", "When the ScheduledJob was created (Unix time): where the no-success alert starts counting before a first success."),
		d("last_schedule_timestamp_seconds", "The slot of the ScheduledJob's last scheduled run that got a Job (status.lastScheduleTime, Unix time); absent before the first."),
		d("last_successful_timestamp_seconds", "When the ScheduledJob's last Job succeeded (status.lastSuccessfulTime, Unix time); absent before the first success."),
		d("next_schedule_timestamp_seconds", "When the ScheduledJob's next slot starts (status.nextScheduleTime, Unix time); absent while suspended or when the schedule is invalid."),
		d("schedule_interval_seconds", "Seconds from the ScheduledJob's next slot to the one after it: the schedule's period, from which the no-success alert's default threshold counts; absent while suspended or when the schedule is invalid."),
		d("active_runs", "The ScheduledJob's Jobs that have not finished (status.active)."),
		d("suspended", "1 while the ScheduledJob is suspended (spec.suspend), else 0."),
		d("stopped_after_failures", "1 while the ScheduledJob is suspended by its spec.stopStrategy.afterFailures (Ready reason StoppedAfterFailures), else 0: the no-success alert is silent while suspended, this one is not."),
		d("no_success_alert_after_seconds", "The ScheduledJob's own threshold of the no-success alert (annotation "+keys.AnnotationAlertNoSuccessAfter+"); absent when not set."))
	if err != nil {
		return nil, err
	}
	return &ObjectMetrics{c}, nil
}

// observe records sj's series from st, the status it has (or is about to have), and interval,
// the schedule's period at the next slot (0: no series). A nil m records nothing.
func (m *ObjectMetrics) observe(sj *v1alpha1.ScheduledJob, st *v1alpha1.ScheduledJobStatus, interval time.Duration) {
	if m == nil {
		return
	}
	m.Set(types.NamespacedName{Namespace: sj.Namespace, Name: sj.Name}, []om.Sample{
		om.Stamp(&sj.CreationTimestamp), om.Stamp(st.LastScheduleTime), om.Stamp(st.LastSuccessfulTime), om.Stamp(st.NextScheduleTime),
		om.IfSet(interval.Seconds()),
		om.Value(float64(max(len(st.Active), int(st.ActiveCount)))),
		om.Flag(ptr.Deref(sj.Spec.Suspend, false) || st.Stop != nil),
		om.Flag(st.Stop != nil && st.Stop.Reason == slotplan.ReasonStoppedAfterFailures),
		om.IfSet(slotplan.NoSuccessAfter(sj).Seconds()),
	})
}

// forget drops the series of the ScheduledJob key (deleted). A nil m does nothing.
func (m *ObjectMetrics) forget(key types.NamespacedName) {
	if m != nil {
		m.Delete(key)
	}
}
