package at

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
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	om "github.com/platform-operators/platform-operators/controller/objectmetrics"
	"github.com/platform-operators/platform-operators/controller/schedule"
	"github.com/platform-operators/platform-operators/controller/statuswrite"
)

// Name is the controller's name in --controllers.
const Name = "at"

// ConditionSucceeded is True when the Job completed, False when it failed or the start was
// missed, Unknown while waiting or running.
const ConditionSucceeded = "Succeeded"

// ConditionStalled is True, with the Succeeded condition's reason and message, while the phase is
// Failed (final until the At is edited); absent otherwise. kstatus reads it.
const ConditionStalled = "Stalled"

// Reasons of the Succeeded condition and of Events.
const (
	ReasonWaiting        = "Waiting"
	ReasonRunning        = "Running"
	ReasonJobComplete    = "JobComplete"
	ReasonJobFailed      = "JobFailed"
	ReasonMissedDeadline = "MissedDeadline"
	ReasonJobDeleted     = "JobDeleted"
	ReasonJobNotOurs     = "JobNameTaken"
	// ReasonJobRejected: the API server refused the Job. Refused as invalid, the At is Failed
	// and an edit retries; refused by admission (a quota, a policy, a webhook), it stays
	// Pending and the create is retried with backoff until startingDeadlineSeconds, if set.
	ReasonJobRejected = "JobRejected"
	// ReasonUnknownTimeZone: spec.timeZone names a zone the manager does not know.
	ReasonUnknownTimeZone = "UnknownTimeZone"
	// ReasonPodsNotCreated: the Job has had no pod for --job-pods-stuck-after (its pod creates are
	// refused); the At stays Running, as the Job may still run once the cause is removed.
	ReasonPodsNotCreated = "PodsNotCreated"
	// ReasonJobSuspended: the Job is suspended (a queue such as Kueue holds it); the At is
	// Pending until it is resumed.
	ReasonJobSuspended = "JobSuspended" // jobstate.ReasonJobSuspended (TestAtReasonsAreTheJobsPackages)
	// ReasonManagedElsewhere: the Job's spec.managedBy names another controller, which has not
	// reported it started; the At is Pending until it does.
	ReasonManagedElsewhere = "ManagedElsewhere" // jobstate.ReasonManagedElsewhere (TestAtReasonsAreTheJobsPackages)
	// ReasonLocalTimeResolved: spec.localTime does not exist or occurs twice in spec.timeZone;
	// the Event says which instant was chosen.
	ReasonLocalTimeResolved = "LocalTimeResolved"
)

// +kubebuilder:rbac:groups=ops.platform-operators.io,resources=ats,verbs=get;list;watch
// +kubebuilder:rbac:groups=ops.platform-operators.io,resources=ats/status,verbs=get;update;patch
// The Job's owner reference sets blockOwnerDeletion, which the OwnerReferencesPermissionEnforcement
// admission plugin (OpenShift, hardened clusters) allows only to who may update the owner's finalizers.
// +kubebuilder:rbac:groups=ops.platform-operators.io,resources=ats/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete

// Reconciler reconciles At objects.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache, for a Job the cache may not have seen yet.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.PassiveClock
	// Workers is how many objects are reconciled at once (at least 1): when many slots fall on
	// the same second, one worker would serialize their creates.
	Workers int
	// JobImage is the image a command runs in when the At sets none (--job-image).
	JobImage string
	// PodsStuckAfter is how long a started Job may have no pod before the At reports
	// PodsNotCreated (--job-pods-stuck-after); 0 never reports it.
	PodsStuckAfter time.Duration
	// Objects are the per-object series (phase, scheduled time) of a limited number of Ats;
	// nil: none.
	Objects *ObjectMetrics

	// gone are the At Jobs seen deleted after they finished (a short ttlSecondsAfterFinished).
	gone *jobs.Gone
	// confirmed are the Ats this process has read as the API server has them.
	confirmed statuswrite.Confirmations
}

// SetupWithManager registers the controller (jobs.Setup); the Job field index must already be
// registered.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) (err error) {
	r.gone, err = jobs.Setup(mgr, Name, "At", &v1alpha1.At{}, r.Workers, r.Clock, r)
	return err
}

// Reconcile runs one pass: read, decide (pure), act, write status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var at v1alpha1.At
	err := r.Client.Get(ctx, req.NamespacedName, &at)
	if apierrors.IsNotFound(err) || (err == nil && at.DeletionTimestamp != nil) {
		if r.Objects != nil {
			r.Objects.Delete(req.NamespacedName) // deleted: its series end
		}
		r.confirmed.Forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	job, err := r.findJob(ctx, &at)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := decide(&at, job, now, r.PodsStuckAfter)
	if d.create {
		// At most once: the status read may predate another process's write of the Job's name
		// (and the Job may be gone since, by a TTL).
		if res, done, err := jobs.ReadyToCreate(ctx, r.APIReader, &r.confirmed, &at, &v1alpha1.At{}, func(live *v1alpha1.At) {
			at.Spec.Command, at.Spec.JobTemplate = live.Spec.Command, live.Spec.JobTemplate
		}); done {
			return res, err
		}
		created, answer, ev, err := jobs.Create(ctx, r.Client, r.APIReader, &at, "At", NewJob(&at, r.JobImage))
		if err != nil {
			return ctrl.Result{}, err
		}
		recordCreate(&at, &d, created, answer, ev, now)
	}

	before := at.DeepCopy()
	at.Status = d.status
	// Never written when nothing changed (a Job's pod moving changes no At status).
	if res, done, err := jobs.WriteStatus(ctx, r.Client, &r.confirmed, &at, before, func(a *v1alpha1.At) v1alpha1.AtStatus { return a.Status }); done {
		return res, err
	}
	r.Objects.observe(&at)
	// Events only after the status that explains them is written.
	for _, e := range d.events {
		r.Recorder.Eventf(&at, nil, e.Kind, e.Reason, "Run", "%s", e.Note)
	}
	if before.Status.Phase != at.Status.Phase {
		ctrl.LoggerFrom(ctx).Info("At phase changed", "at", klog.KObj(&at), "oldPhase", before.Status.Phase, "newPhase", at.Status.Phase, "job", at.Status.JobName)
	}
	return ctrl.Result{RequeueAfter: d.requeue}, nil
}

// CommandUser is the user and group ID a command runs as (not root: Pod Security "restricted").
const CommandUser int64 = 65532

// findJob returns the At's Job: from the cache, else from the API server when the status names a
// Job the cache has not seen yet, else as last seen before it was deleted after finishing (by its
// ttlSecondsAfterFinished, before this At was looked at); nil when there is none.
func (r *Reconciler) findJob(ctx context.Context, at *v1alpha1.At) (*batchv1.Job, error) {
	found, err := jobs.Of(ctx, r.Client, at)
	if err != nil {
		return nil, err
	}
	name := at.Status.JobName
	ours := func(j *batchv1.Job) bool { return name == "" || j.Name == name }
	if name != "" && !slices.ContainsFunc(found, ours) {
		if found, err = jobs.Read(ctx, r.APIReader, at, []string{name}, nil); err != nil {
			return nil, err
		}
	}
	if !slices.ContainsFunc(found, ours) {
		found = r.gone.Of(at.UID)
	}
	if i := slices.IndexFunc(found, ours); i >= 0 {
		return found[i], nil
	}
	return nil, nil
}

// NewJob builds the At's Job, named jobname.Slot and owned by the At, restartPolicy Never and
// backoffLimit 0 unless the template says otherwise, so a command runs once. A template with
// backoffLimitPerIndex keeps backoffLimit unset (batch/v1 defaults it to the largest int32): the
// Job controller counts failures against backoffLimit too, and 0 would fail the Job at the first
// failed index.
func NewJob(at *v1alpha1.At, defaultImage string) *batchv1.Job {
	runAt, _, err := RunTime(at)
	if err != nil {
		runAt = at.Spec.Schedule.UTC() // not reached: Reconcile fails an At whose zone is unknown
	}
	var meta metav1.ObjectMeta
	var spec batchv1.JobSpec
	if at.Spec.JobTemplate != nil {
		meta = at.Spec.JobTemplate.ObjectMeta
		at.Spec.JobTemplate.Spec.DeepCopyInto(&spec)
	} else {
		// Pod Security "restricted", so a command runs in a namespace that enforces it. The
		// user is not root (busybox, the default image, would run as root: the kubelet refuses
		// runAsNonRoot without a user); /tmp stays writable. What needs root takes a jobTemplate.
		spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To(CommandUser),
			RunAsGroup:     ptr.To(CommandUser),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
		spec.Template.Spec.Containers = []corev1.Container{{
			Name:    "command",
			Image:   cmp.Or(at.Spec.Image, defaultImage),
			Command: []string{"/bin/sh", "-c", at.Spec.Command},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}}
	}
	if spec.Template.Spec.RestartPolicy == "" {
		spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	if spec.BackoffLimit == nil && spec.BackoffLimitPerIndex == nil {
		spec.BackoffLimit = ptr.To[int32](0)
	}
	return jobstate.NewJob(at, v1alpha1.GroupVersion.WithKind("At"), jobname.Slot(at, runAt), Name, meta, spec, runAt.Format(time.RFC3339))
}

// setPhase sets phase, message, the Succeeded condition and, for a final phase, the completion
// time (kept if already set).
func setPhase(st *v1alpha1.AtStatus, phase v1alpha1.AtPhase, reason, msg string, completed time.Time) {
	st.Phase = phase
	st.Message = msg
	status := metav1.ConditionUnknown
	switch phase {
	case v1alpha1.AtSucceeded:
		status = metav1.ConditionTrue
	case v1alpha1.AtFailed:
		status = metav1.ConditionFalse
	}
	if !completed.IsZero() && st.CompletionTime == nil {
		st.CompletionTime = &metav1.Time{Time: completed}
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionSucceeded, Status: status, Reason: reason, Message: msg})
	// Failed is final until the At is edited: Stalled says so to kstatus (Flux, kpt, cli-utils),
	// which reads a failed At as Failed, as it reads a failed Job.
	if phase == v1alpha1.AtFailed {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionStalled, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
	}
}

// RunTime is the instant at runs at, in the zone its Job and SCHEDULED_TIME give it in:
// spec.schedule in UTC, or spec.localTime read in spec.timeZone (schedule.ResolveLocal's rules
// for a time that does not exist or occurs twice, said in note).
func RunTime(at *v1alpha1.At) (runAt time.Time, note string, err error) {
	if at.Spec.LocalTime == "" {
		return at.Spec.Schedule.UTC(), "", nil
	}
	zone := ptr.Deref(at.Spec.TimeZone, "")
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "" {
		return time.Time{}, "", fmt.Errorf("unknown time zone %q in spec.timeZone: use an IANA name such as Europe/Berlin", zone)
	}
	runAt, note, err = schedule.ResolveLocal(at.Spec.LocalTime, loc)
	return runAt.In(loc), note, err
}

// CacheKind is the manager cache's At kind: every At (a tenant creates them), each in its
// bounded form (bounded).
func CacheKind() cachebounds.Kind {
	return cachebounds.Kind{
		Object: &v1alpha1.At{}, Transform: bounded,
		Bound: "bounded: metadata bounded (cachebounds.BoundedMeta), spec and status, a command and jobTemplate over 4 KiB as their digest (read from the API when the Job is created)",
	}
}

// bounded is the At cache's transform (jobs.BoundedOwner): the command and jobTemplate are kept
// up to jobs.MaxCachedTemplate together.
var bounded = jobs.BoundedOwner(func(at *v1alpha1.At) *v1alpha1.At {
	return &v1alpha1.At{TypeMeta: at.TypeMeta, ObjectMeta: cachebounds.BoundedMeta(&at.ObjectMeta), Spec: at.Spec, Status: at.Status}
}, func(at *v1alpha1.At) any {
	run := struct {
		Command     string `json:"command,omitempty"`
		JobTemplate any    `json:"jobTemplate,omitempty"`
	}{Command: at.Spec.Command}
	if at.Spec.JobTemplate != nil {
		run.JobTemplate = at.Spec.JobTemplate // not a typed nil: omitted when unset
	}
	return run
}, func(at *v1alpha1.At) { at.Spec.Command, at.Spec.JobTemplate = "", nil })

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
