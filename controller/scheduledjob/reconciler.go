package scheduledjob

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
	"github.com/platform-operators/platform-operators/controller/logic/writeerror"
	om "github.com/platform-operators/platform-operators/controller/objectmetrics"
	"github.com/platform-operators/platform-operators/controller/statuswrite"
	"github.com/platform-operators/platform-operators/controller/writegate"
)

// Name is the controller's name in --controllers, and the created-by label of its Jobs
// (slotplan.CreatedBy, which NewJob writes).
const Name = slotplan.CreatedBy

// The controller writes no field of a spec: the stop strategy's stop is a status record (slotplan's stop.go).
// +kubebuilder:rbac:groups=ops.platform-operators.io,resources=scheduledjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=ops.platform-operators.io,resources=scheduledjobs/status,verbs=get;update;patch
// The Job's owner reference sets blockOwnerDeletion, which the OwnerReferencesPermissionEnforcement
// admission plugin (OpenShift, hardened clusters) allows only to who may update the owner's
// finalizers; upstream's cronjob-controller has the same rule.
// +kubebuilder:rbac:groups=ops.platform-operators.io,resources=scheduledjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete

// Metrics are the ScheduledJob controller's Prometheus series.
type Metrics struct {
	// SkippedSlots counts slots that did not get a Job, by reason (Suspended, MissedDeadline,
	// JobAlreadyActive). Upstream is silent about these.
	SkippedSlots *prometheus.CounterVec
	// CreationSkew observes how late after its slot a Job was created.
	CreationSkew prometheus.Histogram
	// FinishedRuns counts runs (Jobs) seen finishing, by result.
	FinishedRuns *prometheus.CounterVec
}

// NewMetrics creates the series and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		SkippedSlots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_operators_scheduledjob_skipped_slots_total",
			Help: "Scheduled slots that did not run, by reason (MissedDeadline, JobAlreadyActive, JobRejected: once per slot; MissedSlots, TooManyMissedTimes: once per Event about slots passed over while the manager was stopped or behind; Suspended: once per Event about slots passed over while suspended).",
		}, []string{"reason"}),
		CreationSkew: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "platform_operators_scheduledjob_job_creation_skew_seconds",
			Help:    "Time between a slot and the creation of its Job.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}),
		FinishedRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_operators_scheduledjob_runs_finished_total",
			Help: "Runs (Jobs) of ScheduledJobs seen finishing, by result (succeeded, failed).",
		}, []string{"result"}),
	}
	for _, o := range slotplan.SlotOutcomes {
		if o.Counted {
			m.SkippedSlots.WithLabelValues(o.Reason)
		}
	}
	for _, result := range []string{"succeeded", "failed"} {
		m.FinishedRuns.WithLabelValues(result) // both series exist from the start: rate() and alerts need no absent()
	}
	for _, c := range []prometheus.Collector{m.SkippedSlots, m.CreationSkew, m.FinishedRuns} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering scheduledjob metrics: %w", err)
		}
	}
	return m, nil
}

// StatusBackstop is when a ScheduledJob whose slot Job was just created is looked at again if
// the Job's watch event has not brought it back before (it normally does within milliseconds).
const StatusBackstop = 10 * time.Second

// Reconciler reconciles ScheduledJob objects.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache: an active Job the cache has not seen yet is not
	// missing, and an AlreadyExists Job must be read to check who controls it.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	// Workers is how many objects are reconciled at once (at least 1): when many slots fall on
	// the same second, one worker would serialize their creates.
	Workers int
	Metrics *Metrics
	// Objects are the per-object series (last schedule, last success, next run, active runs) of
	// a limited number of ScheduledJobs; nil: none.
	Objects *ObjectMetrics
	// PodsStuckAfter is how long an active Job may have no pod before the ScheduledJob reports
	// PodsNotCreated (--job-pods-stuck-after); 0 never reports it.
	PodsStuckAfter time.Duration

	// Writes holds back status patches and history deletes while Job creates, or the other
	// controllers' writes users wait for (a SecretSync's copies), are in flight; the manager
	// shares one among its controllers. Nil: one of its own, for the Job creates alone.
	Writes *writegate.Gate

	ownWrites writegate.Gate
	// deleted are the active Jobs this process replaced (the slot protocol's step 4, slotplan's doc.go).
	deleted deletions
	// confirmed are the ScheduledJobs this process has read as the API server has them (the slot
	// protocol's step 3, slotplan's doc.go).
	confirmed statuswrite.Confirmations
	// gone are the ScheduledJob Jobs seen deleted after they finished (a short
	// ttlSecondsAfterFinished), until the status records them.
	gone *jobs.Gone
}

// maxWriteHold bounds how long a status patch or history delete waits for in-flight creates.
const maxWriteHold = 2 * time.Second

// writes is the gate the Job creates go through and the status patches wait on.
func (r *Reconciler) writes() *writegate.Gate {
	return cmp.Or(r.Writes, &r.ownWrites)
}

// SetupWithManager registers the controller (jobs.Setup); the Job field index must already be
// registered.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) (err error) {
	r.gone, err = jobs.Setup(mgr, Name, "ScheduledJob", &v1alpha1.ScheduledJob{}, r.Workers, r.Clock, r)
	return err
}

// Reconcile runs one pass: read, decide, then carry the plan out in the order of the slot
// protocol (slotplan's doc.go; carryOut, slots.go): create, write status once, prune, emit Events.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var sj v1alpha1.ScheduledJob
	if err := r.Client.Get(ctx, req.NamespacedName, &sj); err != nil {
		if apierrors.IsNotFound(err) {
			if r.Objects != nil {
				r.Objects.Delete(req.NamespacedName) // deleted: its series end
			}
			r.confirmed.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	children, err := r.children(ctx, &sj)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	decide := func() slotplan.Plan { return slotplan.Decide(&sj, children, now, r.deleted.has, r.PodsStuckAfter) }
	p := decide()
	if len(p.Confirm) > 0 {
		// A recent slot's Job the cache does not show yet must block or be replaced (Forbid,
		// Replace): read those few around the cache, and decide again with what exists.
		found, err := jobs.Read(ctx, r.APIReader, &sj, p.Confirm, isChild)
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(found) > 0 {
			children = append(children, found...)
			slotplan.SortJobs(children)
			p = decide()
		}
	}
	if len(p.Creates) > 0 {
		// Slot protocol, claim (jobs.ReadyToCreate). With a template the cache dropped, decide
		// again on the same inputs and time: the same plan, with whole Jobs.
		dropped := jobs.TemplateDropped(&sj)
		if res, done, err := jobs.ReadyToCreate(ctx, r.APIReader, &r.confirmed, &sj, &v1alpha1.ScheduledJob{}, func(live *v1alpha1.ScheduledJob) {
			sj.Spec.JobTemplate = live.Spec.JobTemplate
		}); done {
			return res, err
		}
		if dropped {
			p = decide()
		}
	} else if !p.Due.IsZero() {
		// Confirm ahead of the slot, once per object and process: left to the pass at the slot,
		// the read adds one GET per ScheduledJob to the first busy slot after a start.
		if _, err := r.confirmed.Current(ctx, r.APIReader, &sj, &v1alpha1.ScheduledJob{}); err != nil {
			log.V(1).Info("Reading the ScheduledJob ahead of its slot failed; the slot's pass reads it", "error", err.Error())
		}
	}
	return r.carryOut(ctrl.LoggerInto(ctx, log.WithValues("scheduledJob", klog.KObj(&sj))), &sj, &p)
}

// children returns the ScheduledJob's Jobs from the cache, plus active Jobs of the last status
// that the cache has not seen yet but the API server has.
func (r *Reconciler) children(ctx context.Context, sj *v1alpha1.ScheduledJob) ([]*batchv1.Job, error) {
	cached, err := jobs.Of(ctx, r.Client, sj)
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(cached, func(j *batchv1.Job) bool { return !isChild(j) })
	seen := map[string]bool{}
	for _, j := range out {
		seen[j.Name] = true
	}
	var unseen []string
	for _, ref := range sj.Status.Active {
		if !seen[ref.Name] && ref.Name != "" { // a reference without a name is dropped by slotplan.Decide's sanitize step
			unseen = append(unseen, ref.Name)
		}
	}
	found, err := jobs.Read(ctx, r.APIReader, sj, unseen, func(j *batchv1.Job) bool { return j.DeletionTimestamp == nil })
	if err != nil {
		return nil, err
	}
	out = append(append(out, found...), r.goneChildren(sj, seen)...)
	slotplan.SortJobs(out)
	return out, nil
}

// isChild: a Job being deleted is not active; one that finished (its TTL's foreground deletion
// waits for its pods) still tells how its run ended.
func isChild(j *batchv1.Job) bool {
	finished, _, _ := jobstate.Finished(j)
	return j.DeletionTimestamp == nil || finished
}

// goneChildren are sj's Jobs that finished and were deleted (a short ttlSecondsAfterFinished)
// before the status recorded how they ended. Each is passed to decide as last seen, marked
// deleted, so its run is recorded as it ended (not Deleted), it is not reported missing, and its
// slot is not run again.
func (r *Reconciler) goneChildren(sj *v1alpha1.ScheduledJob, seen map[string]bool) []*batchv1.Job {
	var out []*batchv1.Job
	for _, j := range r.gone.Of(sj.UID) {
		if seen[j.Name] {
			continue
		}
		running := slices.ContainsFunc(sj.Status.Runs, func(run v1alpha1.ScheduledJobRun) bool {
			return run.JobName == j.Name && (run.Result == v1alpha1.RunRunning || run.Result == v1alpha1.RunWaiting)
		})
		if slotplan.WasActive(sj, j.UID) || running || !slotplan.ClaimRecorded(sj, j) {
			j.DeletionTimestamp = &metav1.Time{Time: r.Clock.Now()}
			out = append(out, j)
		}
	}
	return out
}

// createJob creates a slot's Job through the one create path (jobs.Create) and says what happened
// as the Event slotplan.RecordCreates reads (none for a Job adopted after AlreadyExists). An error
// is not an answer about the Job.
func (r *Reconciler) createJob(ctx context.Context, sj *v1alpha1.ScheduledJob, job *batchv1.Job) (*batchv1.Job, slotplan.Event, error) {
	r.writes().Begin()
	got, answer, ev, err := jobs.Create(ctx, r.Client, r.APIReader, sj, "ScheduledJob", job)
	r.writes().End()
	switch {
	case writeerror.Classify(err) == writeerror.NamespaceTerminating:
		return nil, slotplan.Event{}, err
	case err != nil:
		return nil, slotplan.Event{Kind: corev1.EventTypeWarning, Reason: "FailedCreate", Note: fmt.Sprintf("Error creating job: %v", err)}, err
	case answer == jobs.Adopted:
		return got, slotplan.Event{}, nil
	}
	return got, ev, nil
}

// deleteJob deletes j (its UID, in the background) and returns the Event that says so.
func (r *Reconciler) deleteJob(ctx context.Context, j *batchv1.Job) (slotplan.Event, error) {
	if err := client.IgnoreNotFound(r.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &j.UID})); err != nil {
		return slotplan.Event{Kind: corev1.EventTypeWarning, Reason: "FailedDelete", Note: fmt.Sprintf("Deleting job %s: %v", j.Name, err)}, err
	}
	return slotplan.Event{Kind: corev1.EventTypeNormal, Reason: "SuccessfulDelete", Note: "Deleted job " + j.Name}, nil
}

// CacheKind is the manager cache's ScheduledJob kind: every ScheduledJob (a tenant creates
// them), each in its bounded form (bounded).
func CacheKind() cachebounds.Kind {
	return cachebounds.Kind{
		Object: &v1alpha1.ScheduledJob{}, Transform: bounded,
		Bound: "bounded: metadata bounded (cachebounds.BoundedMeta), spec and status, a jobTemplate over 4 KiB as its digest (read from the API when a Job is created)",
	}
}

// bounded is the ScheduledJob cache's transform (jobs.BoundedOwner): the jobTemplate is kept up
// to jobs.MaxCachedTemplate.
var bounded = jobs.BoundedOwner(func(sj *v1alpha1.ScheduledJob) *v1alpha1.ScheduledJob {
	meta := cachebounds.BoundedMeta(&sj.ObjectMeta, keys.AnnotationRunNow, keys.AnnotationBackfill, keys.AnnotationAlertNoSuccessAfter)
	return &v1alpha1.ScheduledJob{TypeMeta: sj.TypeMeta, ObjectMeta: meta, Spec: sj.Spec, Status: sj.Status}
}, func(sj *v1alpha1.ScheduledJob) any { return sj.Spec.JobTemplate },
	func(sj *v1alpha1.ScheduledJob) { sj.Spec.JobTemplate = batchv1.JobTemplateSpec{} })

// ObjectMetrics are the ScheduledJobs' per-object series, labelled namespace and name, for at
// most a limited number of ScheduledJobs (objectmetrics.Store).
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
