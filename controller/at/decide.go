package at

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

// decision is what one pass does with an At: the status to write, the Events that explain it
// (sent after the status is written), whether to create the Job, and when to look again.
type decision struct {
	status  v1alpha1.AtStatus
	events  []slotplan.Event
	create  bool
	requeue time.Duration
}

// decide is the pure part of a pass: what to do with at, given its Job (nil when it has none),
// the time now and how long a started Job may have no pod before it is reported (stuckAfter,
// --job-pods-stuck-after; 0: never). It reads no clock and calls no API.
func decide(at *v1alpha1.At, job *batchv1.Job, now time.Time, stuckAfter time.Duration) decision {
	d := decision{status: *at.Status.DeepCopy()}
	st := &d.status
	st.ObservedGeneration = at.Generation
	switch slotplan.Ledger(book{at, job}, time.Time{}).State {
	case slotplan.SlotCreated:
		// Once a Job existed, the At never runs again: it stands as its run does (observeRun).
		d.events = append(d.events, observeRun(st, job, now)...)
		observePods(at, &d, job, now, stuckAfter)
	case slotplan.SlotNotRun:
		// Said once; an edit of the At decides again.
	default:
		runAt, note, err := RunTime(at)
		if err != nil {
			// A zone the manager does not know (admission checks only the name's shape).
			setPhase(st, v1alpha1.AtFailed, ReasonUnknownTimeZone, err.Error(), now)
			d.events = append(d.events, slotplan.Event{Kind: corev1.EventTypeWarning, Reason: ReasonUnknownTimeZone, Note: err.Error()})
			break
		}
		if st.ScheduledTime == nil || !st.ScheduledTime.Time.Equal(runAt) {
			st.ScheduledTime = &metav1.Time{Time: runAt}
			if note != "" {
				d.events = append(d.events, slotplan.Event{Kind: corev1.EventTypeNormal, Reason: ReasonLocalTimeResolved, Note: note})
			}
		}
		action, wait := schedule.Once(runAt, at.Spec.StartingDeadlineSeconds, now)
		switch action {
		case schedule.Wait:
			setPhase(st, v1alpha1.AtPending, ReasonWaiting, "Waiting for "+runAt.UTC().Format(time.RFC3339), time.Time{})
			d.requeue = wait
		case schedule.TooLate:
			msg := fmt.Sprintf("Not started: scheduled for %s, more than %ds ago (startingDeadlineSeconds)",
				runAt.UTC().Format(time.RFC3339), ptr.Deref(at.Spec.StartingDeadlineSeconds, 0))
			reason := ReasonMissedDeadline
			if c := meta.FindStatusCondition(at.Status.Conditions, ConditionSucceeded); c != nil && c.Reason == ReasonJobRejected {
				// Refused until its deadline: the refusal is why it did not run, not the manager.
				reason, msg = ReasonJobRejected, msg+"; its Job was refused until then: "+c.Message
			}
			setPhase(st, v1alpha1.AtFailed, reason, msg, now)
			d.events = append(d.events, slotplan.Event{Kind: corev1.EventTypeWarning, Reason: reason, Note: msg})
		case schedule.Run:
			d.create = true
		}
	}
	return d
}

// book is the At's one slot in the slot ledger (slotplan.Book), whatever time the At names: its
// Job, else the status's record of it.
type book struct {
	at  *v1alpha1.At
	job *batchv1.Job
}

func (b book) Job(time.Time) *batchv1.Job { return b.job }

// Record: Created once the status names a Job; NotRun when this generation was decided without
// one (a missed deadline, a template refused as invalid, the name taken: the Succeeded condition
// says why); Due otherwise.
func (b book) Record(time.Time) slotplan.LedgerEntry {
	st := &b.at.Status
	switch {
	case st.JobName != "":
		return slotplan.LedgerEntry{State: slotplan.SlotCreated}
	case st.ObservedGeneration == b.at.Generation && (st.Phase == v1alpha1.AtSucceeded || st.Phase == v1alpha1.AtFailed):
		return slotplan.LedgerEntry{State: slotplan.SlotNotRun}
	}
	return slotplan.LedgerEntry{State: slotplan.SlotDue}
}

// observeRun sets the status from how the At's run stands at now (pure): slotplan.RunOf, from its
// Job, or, the Job gone, from the phase read (Pending and Running have not ended). It returns the
// Warning of a Job deleted before it was seen finishing.
func observeRun(st *v1alpha1.AtStatus, job *batchv1.Job, now time.Time) []slotplan.Event {
	result, o := slotplan.RunOf(job, v1alpha1.RunResult(st.Phase))
	if result == v1alpha1.RunDeleted {
		// Deleted by a user, or finished and deleted by its TTL while no manager watched (a Job
		// seen finishing is passed in as last seen, jobs.Gone).
		msg := fmt.Sprintf("Job %s was deleted and was not seen finishing: deleted before it finished, or its ttlSecondsAfterFinished removed it while no manager was watching", st.JobName)
		setPhase(st, v1alpha1.AtFailed, ReasonJobDeleted, msg, now)
		return []slotplan.Event{{Kind: corev1.EventTypeWarning, Reason: ReasonJobDeleted, Note: msg}}
	}
	if job == nil {
		return nil // it ended, and its Job was deleted after (a TTL): the phase stays
	}
	st.JobName = job.Name
	if st.StartTime == nil {
		t := job.CreationTimestamp
		if t.IsZero() {
			t = metav1.NewTime(now)
		}
		st.StartTime = &t
	}
	switch result {
	case v1alpha1.RunWaiting:
		// Held by a queue (suspended) or by the controller spec.managedBy names: not started,
		// so Pending, with the reason (JobSuspended, ManagedElsewhere) and what holds it.
		setPhase(st, v1alpha1.AtPending, o.Reason, o.Message, time.Time{})
	case v1alpha1.RunRunning:
		setPhase(st, v1alpha1.AtRunning, ReasonRunning, "Job "+job.Name+" is running", time.Time{})
	case v1alpha1.RunSucceeded:
		msg := "Job " + job.Name + " completed"
		if o.Reason == batchv1.JobReasonSuccessPolicy {
			// Some indexes may have failed: the Job's successPolicy says it succeeded.
			msg += " (successPolicy: " + o.Message + ")"
		}
		setPhase(st, v1alpha1.AtSucceeded, ReasonJobComplete, msg, o.Finished)
	default:
		msg, why := "Job "+job.Name+" failed", o.Reason
		if o.Message != "" {
			why += ": " + o.Message
		}
		if why != "" {
			msg += ": " + why
		}
		setPhase(st, v1alpha1.AtFailed, ReasonJobFailed, msg, o.Finished)
	}
	return nil
}

// observePods reports a running Job that has created no pod within stuckAfter. The phase stays
// Running, as the Job may still run once the cause is removed; the Succeeded condition (still
// Unknown) and the message say PodsNotCreated, with one Warning when it becomes so. Until the Job
// would count, it asks to look again then (a pod appearing brings the pass that says Running).
func observePods(at *v1alpha1.At, d *decision, job *batchv1.Job, now time.Time, stuckAfter time.Duration) {
	if d.status.Phase != v1alpha1.AtRunning || job == nil {
		return
	}
	stuck, wait := jobstate.PodsNotCreated(job, now, stuckAfter)
	if !stuck {
		d.requeue = wait
		return
	}
	msg := jobstate.PodsNotCreatedMessage(job.Name, stuckAfter)
	setPhase(&d.status, v1alpha1.AtRunning, ReasonPodsNotCreated, msg, time.Time{})
	if c := meta.FindStatusCondition(at.Status.Conditions, ConditionSucceeded); c == nil || c.Reason != ReasonPodsNotCreated {
		d.events = append(d.events, slotplan.Event{Kind: corev1.EventTypeWarning, Reason: ReasonPodsNotCreated, Note: msg})
	}
}

// recordCreate sets the status from the API server's answer to the create (jobs.Create), with the
// Event that says so: a Job created or adopted is observed; refused as invalid or a name taken
// fail the At until it is edited. A refusal at admission may pass later: the At stays Pending
// (JobRejected), a Warning is sent once per distinct refusal, and the create is retried as
// jobstate.Window.Retry says; past startingDeadlineSeconds the At ends Failed (decide). Pure.
func recordCreate(at *v1alpha1.At, d *decision, created *batchv1.Job, answer jobs.Answer, ev slotplan.Event, now time.Time) {
	msg := ev.Note
	switch {
	case answer == jobs.RefusedAtAdmission:
		old := meta.FindStatusCondition(at.Status.Conditions, ConditionSucceeded)
		setPhase(&d.status, v1alpha1.AtPending, ReasonJobRejected, msg, time.Time{})
		if old == nil || old.Reason != ReasonJobRejected || old.Message != msg {
			d.events = append(d.events, ev)
		}
		w := jobstate.Window{Due: d.status.ScheduledTime.Time} // set by the decide that chose to create
		if s := at.Spec.StartingDeadlineSeconds; s != nil {
			w.End = w.Due.Add(time.Duration(*s) * time.Second)
		}
		retry, ok := w.Retry(now)
		if !ok {
			retry = w.End // the pass at the deadline ends the At Failed (JobRejected, decide)
		}
		d.requeue = max(retry.Sub(now), time.Second)
		return
	case created != nil:
		observeRun(&d.status, created, now)
	default:
		setPhase(&d.status, v1alpha1.AtFailed, ev.Reason, msg, now)
	}
	d.events = append(d.events, ev)
}
