package slotplan

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slots"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

// ConditionReady is True when the schedule and time zone are usable.
const ConditionReady = "Ready"

// ConditionStalled is True, with Ready's reason and message, while Ready is False: the spec cannot
// run until it is edited. kstatus reads it (Failed); absent otherwise.
const ConditionStalled = "Stalled"

// ConditionJobsStuck is True while an active Job has had no pod for --job-pods-stuck-after
// (reason PodsNotCreated: its pod creates are refused), and absent otherwise.
const ConditionJobsStuck = "JobsStuck"

// SlotOutcome is one way a slot can end.
type SlotOutcome struct {
	// Reason is the reason of the run record, of the Event and the metric label.
	Reason string
	// Result is the run's result in status.runs; "" when the slots are named in the Event only.
	Result v1alpha1.RunResult
	// EventType is the type of the Event.
	EventType string
	// Counted is whether platform_operators_scheduledjob_skipped_slots_total has a series for it.
	Counted bool
}

// SlotOutcomes are the outcomes a slot can end with: every slot due while the ScheduledJob
// exists ends with exactly one of them, recorded once (docs/scheduling.md, "How a slot ends").
var SlotOutcomes = []SlotOutcome{
	{ReasonSuccessfulCreate, v1alpha1.RunRunning, corev1.EventTypeNormal, false},
	{ReasonJobRejected, v1alpha1.RunFailed, corev1.EventTypeWarning, true},
	{ReasonJobAlreadyActive, v1alpha1.RunSkipped, corev1.EventTypeWarning, true},
	{ReasonMissedDeadline, v1alpha1.RunSkipped, corev1.EventTypeWarning, true},
	{ReasonMissedSlots, "", corev1.EventTypeWarning, true},
	{ReasonTooManyMissedTimes, "", corev1.EventTypeWarning, true},
	{ReasonSuspended, "", corev1.EventTypeNormal, true},
}

// Condition reasons, Event reasons and skipped-slot metric reasons.
const (
	ReasonScheduled          = "Scheduled"
	ReasonSuspended          = "Suspended"
	ReasonInvalidSchedule    = "InvalidSchedule"
	ReasonUnknownTimeZone    = "UnknownTimeZone"
	ReasonScheduleNeverFires = "ScheduleNeverFires"
	ReasonMissedDeadline     = "MissedDeadline"
	ReasonJobAlreadyActive   = "JobAlreadyActive"
	ReasonTooManyMissedTimes = "TooManyMissedTimes"
	ReasonRunNowSkipped      = "RunNowSkipped"
	// ReasonRunNowDelayed: a run-now token came within RunNowInterval of the last run-now Job;
	// it starts when the interval has passed.
	ReasonRunNowDelayed    = "RunNowDelayed"
	ReasonSawCompletedJob  = "SawCompletedJob"
	ReasonMissingJob       = "MissingJob"
	ReasonSuccessfulCreate = "SuccessfulCreate"
	// ReasonJobRejected: the API server refused the Job (admission: a ResourceQuota, a
	// ValidatingAdmissionPolicy, a webhook; or the template is invalid).
	ReasonJobRejected = "JobRejected"
	// ReasonPodsNotCreated: an active Job has had no pod for --job-pods-stuck-after.
	ReasonPodsNotCreated = "PodsNotCreated"
	// ReasonStatusRepaired: the status read held what the steps cannot read (sanitize).
	ReasonStatusRepaired = "StatusRepaired"
	// ReasonMissedSlots: slots before the one being handled passed without being looked at
	// while they were due (the manager was stopped, had no leader, or was behind).
	ReasonMissedSlots = "MissedSlots"
)

// Event is an Event the pass sends once its status is written: its type (Normal, Warning), reason
// and note.
type Event struct{ Kind, Reason, Note string }

// Creation is a Job to create: for a scheduled slot, for a run-now token, or for a backfilled
// slot (backfill.go: with the slot after it in the range, and the pass's time).
type Creation struct {
	Job          *batchv1.Job
	Slot         *time.Time
	token        string
	backfill     *time.Time
	backfillNext *metav1.Time
	at           time.Time
}

// Plan is what one reconcile should do; Decide computes it without calling the API.
type Plan struct {
	// Status is the new status before the creates and deletes below are applied.
	Status v1alpha1.ScheduledJobStatus
	// Replace are active Jobs to delete before creating (concurrencyPolicy Replace).
	Replace []*batchv1.Job
	Creates []Creation
	// Prune are finished Jobs beyond the history limits.
	Prune  []*batchv1.Job
	Events []Event
	// Finished are the results ("succeeded", "failed") of runs seen finishing in this pass:
	// counted in the metric once the status that stops listing them active is written.
	Finished []string
	// Skipped is the reason a slot was skipped ("" if none): counted in the metric.
	Skipped string
	// PassedOver are the reasons of the Events that name slots passed over (MissedSlots,
	// TooManyMissedTimes, Suspended on resume): counted in the metric once per Event.
	PassedOver []string
	// sched is the schedule the pass decided on (zero when it could not be read).
	sched schedule.Union
	// RequeueAfter is when to look again; 0 means only on a change.
	RequeueAfter time.Duration
	// Due is when the next slot starts (its jitter included), the instant requeueAfter aims
	// at; zero when there is none.
	Due time.Time
	// Interval is the time from the next slot to the one after it (0: none, suspended): the
	// schedule's period as the no-success alert reads it (ObjectMetrics).
	Interval time.Duration
	// scheduled is Ready's message when all is well (kept for after a rejected template).
	scheduled string
	// PodsCheck is when an active Job with no pod yet would count as stuck (0: none): the
	// reconciler looks again then if nothing sooner is due.
	PodsCheck time.Duration
	// Confirm are the Jobs the reconciler reads from the API server before creating, deciding
	// again with the ones it finds (unconfirmedSlots).
	Confirm []string
}

// Decide is the whole ScheduledJob logic as a function of the object, its Jobs, now, which Jobs
// this process deleted itself (deletedByUs: never reported missing) and how long an active Job
// may have no pod (stuckAfter, --job-pods-stuck-after; 0: never reported). Its steps run in
// order, each reading the object and what the steps before it wrote to the plan.
func Decide(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, now time.Time, deletedByUs func(types.UID) bool, stuckAfter time.Duration) (p Plan) {
	p.Status = *sj.Status.DeepCopy()
	defer func() { fitStatus(&p.Status) }()
	if fixed := sanitize(&p.Status); len(fixed) > 0 {
		p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonStatusRepaired, fmt.Sprintf("The status read could not be used as it was (%v): repaired", fixed)})
	}
	p.Status.ObservedGeneration = sj.Generation
	p.Status.ScheduleSummary = ScheduleSummary(sj)
	observeJobs(sj, children, deletedByUs, &p)
	recordClaims(sj, children, now, &p)
	observePods(sj, children, now, stuckAfter, &p)
	if sj.DeletionTimestamp != nil {
		return p
	}
	sched, ok := readSchedule(sj, now, &p)
	if !ok {
		return p
	}
	due := findSlots(sj, sched, now, &p)
	if held := stopStep(sj, now, &p); held || ptr.Deref(sj.Spec.Suspend, false) {
		suspend(sj, &p)
		return p
	}
	p.scheduled = "Next run at never"
	if next := p.Status.NextScheduleTime; next != nil {
		p.scheduled = "Next run at " + formatSlot(next.Time, sched)
	}
	// Ready stays JobRejected (the current template refused) until the spec changes or a create succeeds.
	if c := ready(&sj.Status); c.Reason != ReasonJobRejected || c.ObservedGeneration != sj.Generation || refusalRan(sj, children) {
		setReady(sj, &p.Status, metav1.ConditionTrue, ReasonScheduled, p.scheduled)
	}
	runDueSlot(sj, children, due, &p)
	requestRunNow(sj, children, now, sched, &p)
	requestBackfill(sj, children, now, due, &p)
	p.Confirm = unconfirmedSlots(sj, children, due, &p)
	return p
}

// confirmWindow and maxConfirm bound the slots whose Jobs a pass reads from the API server: the
// Job cache lags it by a watch event (milliseconds; seconds at a busy slot or on a new leader), so
// only the Jobs of the most recent slots can exist without the cache showing them.
const (
	confirmWindow = 10 * time.Minute
	maxConfirm    = 5
)

// unconfirmedSlots returns the Jobs whose existence would change what p plans and that neither
// the status nor the Job cache account for: a slot Job the previous pass created must block or
// be replaced even while the cache does not show it, and a slot whose Job exists is never passed
// over or skipped for a cache behind.
func unconfirmedSlots(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, d dueSlots, p *Plan) []string {
	allow := sj.Spec.ConcurrencyPolicy == v1alpha1.AllowConcurrent || sj.Spec.ConcurrencyPolicy == ""
	// skipOnly: nothing passed over and nothing created that another Job blocks or replaces; only
	// a MissedDeadline skip then asks for a read, of the one slot it records.
	skipOnly := len(p.PassedOver) == 0 && (len(p.Creates) == 0 || allow)
	if skipOnly && p.Skipped != ReasonMissedDeadline {
		return nil
	}
	from := d.slotNow.Add(-confirmWindow)
	if d.earliestAll.After(from) {
		from = d.earliestAll
	}
	unknown := func(name string) bool {
		return jobNamed(children, name) == nil && !slices.ContainsFunc(p.Creates, func(c Creation) bool { return c.Job.Name == name })
	}
	var slots []time.Time
	for t := d.sched.Next(from); !t.IsZero() && !t.After(d.slotNow); t = d.sched.Next(t) {
		slots = append(slots, t)
	}
	var out []string
	for i := len(slots) - 1; i >= 0 && len(out) < maxConfirm; i-- {
		if name := jobname.Slot(sj, slots[i]); unknown(name) {
			out = append(out, name)
			if skipOnly {
				break
			}
		}
	}
	if len(p.Creates) == 0 || allow {
		return out
	}
	// A run-now or backfill Job that a pass which died before its status write created is not in
	// the record either, and blocks or must be replaced as a slot's Job does.
	if token, ok := newRunNowToken(sj); ok && unknown(jobname.RunNow(sj, token)) {
		out = append(out, jobname.RunNow(sj, token))
	}
	if bf := p.Status.Backfill; bf != nil && bf.NextSlot != nil && unknown(jobname.Backfill(sj, bf.NextSlot.Time)) {
		out = append(out, jobname.Backfill(sj, bf.NextSlot.Time))
	}
	return out
}

// observeJobs is the history step, run whatever else happens (suspended, a bad schedule, failing
// creates): the active list is rebuilt from the Jobs that exist, never trusted from the last status.
func observeJobs(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, deletedByUs func(types.UID) bool, p *Plan) {
	st := &p.Status
	var succeeded, failed []*batchv1.Job
	active := []corev1.ObjectReference{}
	seen := map[types.UID]bool{}
	for _, j := range children {
		seen[j.UID] = true
		if slot, ok := slotOf(sj, j, false); ok {
			dropNotRun(st, slot) // a refused slot tried again: it ran
		}
		finished, how, when := jobstate.Finished(j)
		if !finished {
			ref, _ := activeRef(sj.Status.Active, j)
			active = append(active, ref)
			continue
		}
		result := "failed" // the runs-finished metric's label
		if how == batchv1.JobComplete {
			result = "succeeded"
			succeeded = append(succeeded, j)
			if st.LastSuccessfulTime == nil || when.After(st.LastSuccessfulTime.Time) {
				st.LastSuccessfulTime = &metav1.Time{Time: when}
			}
		} else {
			failed = append(failed, j)
		}
		if WasActive(sj, j.UID) {
			p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonSawCompletedJob, fmt.Sprintf("Saw completed job: %s, condition: %s", j.Name, how)})
			p.Finished = append(p.Finished, result)
		}
	}
	for _, ref := range sj.Status.Active {
		if !seen[ref.UID] && !deletedByUs(ref.UID) {
			p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonMissingJob, "Active job went missing: " + ref.Name})
		}
	}
	// Bounded (maxActiveRefs): the list keeps the first by name; one more changes only the count.
	st.ActiveCount = int32(len(active))
	st.Active = active[:min(len(active), maxActiveRefs)]
	st.Runs = runHistory(sj.Status.Runs, children, runHistoryLimit(sj))
	p.Prune = historyToPrune(sj, succeeded, failed)
}

// recordClaims is the record step: a slot Job that exists (or was seen finishing before it was
// deleted, jobs.Gone) while the status read does not record its slot was created by a pass that
// left the record to the next one: this one, whatever else it finds. Only a Job named after its
// slot counts: the scheduled-time annotation alone could be edited on the Job.
func recordClaims(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, now time.Time, p *Plan) {
	var latest *time.Time
	for _, j := range children {
		slot, ok := slotOf(sj, j, false)
		if !ok || slot.After(now) || (sj.Status.LastScheduleTime != nil && !slot.After(sj.Status.LastScheduleTime.Time)) {
			continue
		}
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job " + j.Name})
		if latest == nil || slot.After(*latest) {
			latest = &slot
		}
	}
	if latest != nil {
		p.Status.LastScheduleTime = &metav1.Time{Time: *latest}
	}
}

// slotOf returns the slot whose Job j is: a Job of sj named after the slot its scheduled-time
// annotation says, a scheduled one (jobname.Slot, or the name used up to 0.1.0; not a run-now
// Job) or, with backfill, a backfill Job (jobname.Backfill).
func slotOf(sj *v1alpha1.ScheduledJob, j *batchv1.Job, backfill bool) (time.Time, bool) {
	slot, err := time.Parse(time.RFC3339, j.Annotations[jobstate.ScheduledTimeAnnotation])
	_, runNow := j.Annotations[keys.AnnotationRunNowToken]
	if backfill {
		return slot, err == nil && j.Name == jobname.Backfill(sj, slot)
	}
	return slot, err == nil && !runNow && (j.Name == jobname.Slot(sj, slot) || j.Name == jobname.LegacySlot(sj.Name, slot))
}

// observePods is the pods step: an active Job that has had no pod for stuckAfter (its pod creates
// refused, which the Job controller says only in Events on the Job) sets the JobsStuck condition,
// with one Warning per Job the condition read did not name. Until a pod-less Job would count,
// PodsCheck asks to look again then; after that a pod appearing brings the next pass.
func observePods(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, now time.Time, stuckAfter time.Duration, p *Plan) {
	var stuck []string
	for _, j := range children {
		// Finished or being deleted: neither stuck nor to look at again (jobstate.PodsNotCreated).
		isStuck, wait := jobstate.PodsNotCreated(j, now, stuckAfter)
		switch {
		case isStuck:
			stuck = append(stuck, j.Name)
		case wait > 0 && (p.PodsCheck == 0 || wait < p.PodsCheck):
			p.PodsCheck = wait
		}
	}
	if len(stuck) == 0 {
		meta.RemoveStatusCondition(&p.Status.Conditions, ConditionJobsStuck)
		return
	}
	// Bounded: the condition names the first maxStuckNamed (by name) and counts the rest.
	old := meta.FindStatusCondition(sj.Status.Conditions, ConditionJobsStuck)
	named := stuck[:min(len(stuck), maxStuckNamed)]
	for _, name := range named {
		if old == nil || !mentions(old.Message, name) {
			p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonPodsNotCreated, jobstate.PodsNotCreatedMessage(name, stuckAfter)})
		}
	}
	msg := jobstate.PodsNotCreatedMessage(stuck[0], stuckAfter)
	if len(stuck) > 1 {
		list := strings.Join(named, ", ")
		if more := len(stuck) - len(named); more > 0 {
			list += fmt.Sprintf(" and %d more", more)
		}
		msg = fmt.Sprintf("Jobs %s have created no pod in %s: their pods are refused (Pod Security admission, a ResourceQuota, an admission webhook) or cannot be created; "+
			"\"kubectl describe job <name>\" shows the Job controller's FailedCreate events. They may still run once the cause is removed", list, stuckAfter)
	}
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: ConditionJobsStuck, Status: metav1.ConditionTrue,
		Reason: ReasonPodsNotCreated, Message: msg, ObservedGeneration: sj.Generation})
}

// mentions reports whether msg names the Job name as a whole word (Job names are DNS subdomains:
// another Job's name may contain this one).
func mentions(msg, name string) bool {
	inName := func(b byte) bool { return b == '-' || b == '.' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
	for i := 0; ; {
		k := strings.Index(msg[i:], name)
		if k < 0 {
			return false
		}
		start, end := i+k, i+k+len(name)
		if (start == 0 || !inName(msg[start-1])) && (end == len(msg) || !inName(msg[end])) {
			return true
		}
		i = start + 1
	}
}

// readSchedule is the schedule step: it parses the schedules in the time zone, or, for a user
// error, says so once (Ready False and a Warning when the problem is new) and reports false:
// nothing runs and nothing requeues until the spec changes (no hot loop).
func readSchedule(sj *v1alpha1.ScheduledJob, now time.Time, p *Plan) (schedule.Union, bool) {
	sched, err := schedule.ParseAll(slots.Schedules(sj), ptr.Deref(sj.Spec.TimeZone, ""), now)
	if err == nil {
		return sched, true
	}
	reason := ReasonInvalidSchedule
	switch {
	case errors.Is(err, schedule.ErrUnknownTimeZone):
		reason = ReasonUnknownTimeZone
	case errors.Is(err, schedule.ErrNeverFires):
		reason = ReasonScheduleNeverFires
	}
	if setReady(sj, &p.Status, metav1.ConditionFalse, reason, err.Error()) {
		p.Events = append(p.Events, Event{corev1.EventTypeWarning, reason, err.Error()})
	}
	p.Status.NextScheduleTime = nil
	return schedule.Union{}, false
}

// dueSlots is what the slot step found.
type dueSlots struct {
	sched schedule.Union
	// last is status.lastScheduleTime: the last slot that got a Job.
	last *time.Time
	// lastSkipped is status.lastSkippedTime as read: the last slot reported skipped.
	lastSkipped *time.Time
	// earliestOK is the time after which slots count, startingDeadlineSeconds included;
	// earliestAll the same without it.
	earliestOK, earliestAll time.Time
	// slotNow is now as the slot math sees it (the jitter offset behind).
	slotNow time.Time
	// recent is the most recent slot since the last one (nil: none); recentOK the same within
	// startingDeadlineSeconds, with how many slots were missed on the way to it.
	recent, recentOK *time.Time
	missed           schedule.Missed
}

// handled reports whether slot (nil: none) needs no more work: it got a Job (at or before
// lastScheduleTime) or was reported skipped.
func (d dueSlots) handled(slot *time.Time) bool {
	return slot == nil || (d.last != nil && !slot.After(*d.last)) || (d.lastSkipped != nil && d.lastSkipped.Equal(*slot))
}

// findSlots is the slot step: it records the schedule being observed (slots before it was first
// seen never run: an edit must not fire a run for the past, as upstream's does), finds the due
// slots, and sets when to wake next (status.nextScheduleTime, the requeue).
func findSlots(sj *v1alpha1.ScheduledJob, sched schedule.Union, now time.Time, p *Plan) dueSlots {
	st := &p.Status
	// An edit is seen once (passOverEdited names the old schedule's slots no pass decided); a
	// status edited or restored in part counts from creation (slots.ObservedSince).
	since, edited := slots.ObservedSince(sj, now)
	if edited {
		passOverEdited(sj, now, p)
		sealNotRun(st)
	}
	st.ObservedSchedule, st.ObservedScheduleTime = slots.Observed(sj), &since
	// An @every entry counts its slots from the minute the schedules were first seen (creation,
	// or the last edit), so it fires on its own grid next to other entries (schedule.Anchored),
	// on whole minutes: a Job is named after its slot's minute, and @every is whole minutes.
	sched = sched.Anchored(st.ObservedScheduleTime.Truncate(time.Minute))
	p.sched = sched
	d := dueSlots{sched: sched, last: timeOf(st.LastScheduleTime), lastSkipped: timeOf(sj.Status.LastSkippedTime)}
	// Jitter: every slot of this object starts offset later. The slot math runs on a clock
	// offset behind, so a slot is due (and its deadline counts) from slot+offset, while the slot
	// itself (the Job's name, lastScheduleTime) stays the scheduled time.
	offset := slots.JitterOffset(sj)
	d.slotNow = now.Add(-offset)
	created, deadline := sj.CreationTimestamp.Time, sj.Spec.StartingDeadlineSeconds
	d.earliestAll = schedule.Earliest(created, d.last, &since.Time, deadline, d.slotNow, false)
	d.earliestOK = schedule.Earliest(created, d.last, &since.Time, deadline, d.slotNow, true)
	d.recent, _ = sched.MostRecent(d.earliestAll, d.slotNow)
	d.recentOK, d.missed = sched.MostRecent(d.earliestOK, d.slotNow)
	st.NextScheduleTime = nil
	if wait, next, ok := sched.RequeueAfter(d.earliestAll, d.slotNow); ok {
		p.RequeueAfter, p.Due = wait, next.Add(offset)
		st.NextScheduleTime = &metav1.Time{Time: p.Due} // when it will start
		if after := sched.Next(next); !after.IsZero() {
			p.Interval = after.Sub(next)
		}
	}
	return d
}

// passOverEdited names and records the slots of the schedule observed until now that were due and
// that no pass decided before the edit was seen: the edited schedule never runs the past, and the
// old one's slots are not lost silently. Nothing when the old schedule cannot be read back.
func passOverEdited(sj *v1alpha1.ScheduledJob, now time.Time, p *Plan) {
	// The plan's status: the record step has already recorded the Jobs that exist (a slot
	// whose Job the previous pass created, leaving its record to this one, is not passed over).
	st := &p.Status
	tz, specs, ok := strings.Cut(st.ObservedSchedule, " ")
	if st.ObservedScheduleTime == nil || !ok {
		return
	}
	old, err := schedule.ParseAll(strings.Split(specs, " | "), tz, now)
	if err != nil {
		return
	}
	old = old.Anchored(st.ObservedScheduleTime.Truncate(time.Minute))
	from := st.ObservedScheduleTime.Time
	for _, t := range []*metav1.Time{st.LastScheduleTime, st.LastSkippedTime} {
		if t != nil && t.After(from) {
			from = t.Time
		}
	}
	upTo := now.Add(-slots.JitterOffset(sj))
	slots, more := old.Between(from.Add(time.Second), upTo.Add(time.Second), MaxBackfillSlots)
	// Those a pass before named (its status written: passed over, or the edit seen again) are
	// not named twice.
	slots = slices.DeleteFunc(slots, func(t time.Time) bool { return InRanges(st.NotRun, t) != nil })
	if len(slots) == 0 {
		return
	}
	last := slots[len(slots)-1]
	if more {
		last = upTo
	}
	announcePassedOver(p, wasSuspended(sj) || ptr.Deref(sj.Spec.Suspend, false), false, "Slots from %s up to %s were not run: the schedule was edited before they were handled (%s)",
		formatSlot(slots[0], old), now.In(old.Location()).Format(time.RFC3339))
	recordNotRun(&p.Status, old, slots[0], last, ReasonMissedSlots)
}

// skip reports slot as getting no Job, for reason: in the run history, lastSkippedTime, the
// ledger (notRun), the metric and a Warning.
func skip(sj *v1alpha1.ScheduledJob, p *Plan, sched schedule.Union, slot time.Time, reason, note string) {
	p.Status.Runs = addRun(p.Status.Runs, v1alpha1.ScheduledJobRun{ScheduledTime: metav1.NewTime(slot), Result: v1alpha1.RunSkipped, Reason: reason}, runHistoryLimit(sj))
	p.Status.LastSkippedTime = &metav1.Time{Time: slot}
	recordNotRun(&p.Status, sched, slot, slot, reason)
	p.Skipped = reason
	p.Events = append(p.Events, Event{corev1.EventTypeWarning, reason, note})
}

// suspend is the suspend step, for a ScheduledJob suspended by a user or stopped by its stop
// strategy: no Job, no nextScheduleTime and no requeue (a spec change or a Job's event brings the
// next pass); a run-now request is spent with a Warning. On resume the slot step finds the slots
// that passed: the most recent runs, within startingDeadlineSeconds, and passOver names the rest.
func suspend(sj *v1alpha1.ScheduledJob, p *Plan) {
	st := &p.Status
	status, reason, msg, kind := suspendedReady(sj, st)
	if setReady(sj, st, status, reason, msg) {
		p.Events = append(p.Events, Event{kind, reason, msg})
	}
	if st.Stop == nil { // suspended by a user: the runs until now stop counting for the stop strategy
		st.StopCountAfter = countAfter(st.StopCountAfter, st.Runs)
	}
	st.NextScheduleTime = nil
	p.RequeueAfter, p.Due, p.Interval = 0, time.Time{}, 0
	st.RunNowWaiting = ""
	if token, ok := newRunNowToken(sj); ok {
		st.LastRunNowToken = token
		p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonRunNowSkipped, fmt.Sprintf("Run-now %q not started: suspended", token)})
	}
}

// wasSuspended reports whether the status read says the ScheduledJob was suspended (by a user
// or by its stop strategy).
func wasSuspended(sj *v1alpha1.ScheduledJob) bool {
	return ready(&sj.Status).Reason == ReasonSuspended || sj.Status.Stop != nil
}

// RunNowInterval is the least time between two run-now Jobs of one ScheduledJob: each new token
// of the run-now annotation creates a Job, and whoever may annotate the ScheduledJob decides how
// often tokens come. A token within the interval waits for it to pass (RunNowDelayed, once).
const RunNowInterval = time.Minute

// newRunNowToken returns the run-now token asked for, if it is one not handled yet.
func newRunNowToken(sj *v1alpha1.ScheduledJob) (string, bool) {
	token := sj.Annotations[keys.AnnotationRunNow]
	return token, token != "" && token != sj.Status.LastRunNowToken
}

// requestRunNow is the run-now step, after the due slot: a new token becomes a Job named after
// it, unless the concurrency step refuses, which spends the token with a Warning. A token whose
// Job exists already (created by a pass that died before its status write) is recorded, not
// created again.
func requestRunNow(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, now time.Time, sched schedule.Union, p *Plan) {
	token, ok := newRunNowToken(sj)
	p.Status.RunNowWaiting = ""
	if !ok {
		return
	}
	name := jobname.RunNow(sj, token)
	if j := jobNamed(children, name); j != nil {
		p.Status.LastRunNowToken = token
		p.Status.LastRunNowTime = runNowTime(Creation{Job: j})
		p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonSuccessfulCreate, "Created job " + name})
		return
	}
	// Until RunNowInterval after the last run-now Job; one in the future (the clock went back)
	// waits at most one interval, never longer.
	var wait time.Duration
	if last := sj.Status.LastRunNowTime; last != nil {
		wait = min(last.Add(RunNowInterval).Sub(now), RunNowInterval)
	}
	if wait > 0 {
		if sj.Status.RunNowWaiting != token {
			p.Events = append(p.Events, Event{corev1.EventTypeNormal, ReasonRunNowDelayed,
				fmt.Sprintf("Run-now %q starts in %v: at most one run-now Job a minute", token, wait.Round(time.Second))})
		}
		p.Status.RunNowWaiting = token
		// One wake-up at the end of the interval, not a poll.
		requeueWithin(p, wait)
		return
	}
	switch ok, blockers := admit(sj, children, p); {
	case len(blockers) > 0:
		p.Status.LastRunNowToken = token
		p.Events = append(p.Events, Event{corev1.EventTypeWarning, ReasonRunNowSkipped,
			fmt.Sprintf("Run-now %q not started: concurrencyPolicy is Forbid and %v is active", token, blockers)})
	case ok:
		p.Creates = append(p.Creates, Creation{Job: NewJob(sj, name, now, sched.Location(), token), token: token})
	}
}

// admit is the concurrency step, asked before each new Job: it reports whether the Job may start
// now, or the Jobs that block it (Forbid); neither: it waits for a later pass, which it asks for.
// A Job this pass already creates makes the new one wait under Forbid and Replace: which of the
// two runs is decided when the first exists. Under Replace only active Jobs a written status
// accounts for are deleted: a Job whose slot only it records is recorded by this pass first, and
// replaced by the next (deleting it now, then losing this pass's status write, would leave the
// slot with neither Job nor record).
func admit(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, p *Plan) (ok bool, blockers []string) {
	policy := sj.Spec.ConcurrencyPolicy
	if policy != v1alpha1.ForbidConcurrent && policy != v1alpha1.ReplaceConcurrent {
		return true, nil
	}
	if len(p.Creates) > 0 { // this pass's other run starts first
		requeueWithin(p, time.Second)
		return false, nil
	}
	var active []*batchv1.Job // the runs: not finished and not being deleted
	for _, j := range children {
		if finished, _, _ := jobstate.Finished(j); !finished && j.DeletionTimestamp == nil {
			active = append(active, j)
			blockers = append(blockers, j.Name)
		}
	}
	if policy == v1alpha1.ForbidConcurrent {
		return len(blockers) == 0, blockers
	}
	if len(p.Replace) > 0 {
		return true, nil
	}
	var replace []*batchv1.Job
	for _, j := range active {
		if !ClaimRecorded(sj, j) {
			if slot, ok := slotOf(sj, j, true); ok {
				// Its backfill's cursor may not reach it while the backfill waits for the
				// active Jobs: the ledger records the slot now (status.backfilled).
				recordBackfilled(&p.Status, p.sched, slot)
			}
			// The active Job is recorded before it is replaced.
			requeueWithin(p, time.Second)
			return false, nil
		}
		replace = append(replace, j)
	}
	p.Replace = replace
	return true, nil
}

// runDueSlot decides the due slot: a Job, a skip, or nothing. The slots before it that no pass
// looked at while they were due are passed over (passOver).
func runDueSlot(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, d dueSlots, p *Plan) {
	slot := d.recentOK
	recent := cmp.Or(slot, d.recent)
	if rec := p.Status.LastScheduleTime; recent == nil && rec != nil && (sj.Status.LastScheduleTime == nil || rec.After(sj.Status.LastScheduleTime.Time)) {
		recent = &rec.Time // the record step's: the most recent slot ran, its pass's status lost
	}
	if recent != nil {
		// Whether this pass decides the most recent slot or a pass before it did (its Job
		// recorded by this pass's record step, its own status write lost), the slots before it
		// are named and recorded once.
		passOver(sj, children, d, p, *recent)
	}
	if slot == nil {
		// A slot passed but is older than startingDeadlineSeconds: upstream is silent here.
		if !d.handled(d.recent) && !decided(sj, children, p, *d.recent) {
			skip(sj, p, d.sched, *d.recent, ReasonMissedDeadline, fmt.Sprintf("Missed scheduled time to start a job: %s (startingDeadlineSeconds %d)",
				formatSlot(*d.recent, d.sched), ptr.Deref(sj.Spec.StartingDeadlineSeconds, 0)))
		}
		return
	}
	switch {
	case decided(sj, children, p, *slot):
		// Its Job exists under one of its names, or a backfill ran it: never create twice.
		return
	case d.handled(slot) && !retryRefused(sj, d, p, *slot):
		// One outcome per slot, final once written (a slot skipped under Forbid does not run
		// when the active Job ends), except a refused one (doc.go, step 2).
		return
	}
	// Neither admitted nor blocked, nothing is decided: the pass records what holds the slot
	// back, and the next decides.
	switch ok, blockers := admit(sj, children, p); {
	case len(blockers) > 0:
		if !d.handled(slot) {
			skip(sj, p, d.sched, *slot, ReasonJobAlreadyActive, fmt.Sprintf("Not starting the run of %s because prior execution is running and concurrency policy is Forbid: %v", formatSlot(*slot, d.sched), blockers))
		}
	case ok:
		p.Creates = append(p.Creates, Creation{Job: NewJob(sj, jobname.Slot(sj, *slot), *slot, d.sched.Location(), ""), Slot: slot})
	}
}

// decided reports whether the ledger says slot had its run: its Job exists (under any of its
// names), or a backfill dealt with it.
func decided(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, p *Plan, slot time.Time) bool {
	e := slotLedger(sj, &p.Status, children, slot)
	return e.Job != nil || e.State == SlotBackfilled
}

// passOver names and records the slots before slot that passed without being looked at while
// they were due: only the most recent slot runs, as upstream, and the ones before it are named in
// one Event and one range in status.notRun rather than lost silently. It counts from the status
// read: the record step may have recorded a slot whose creating pass lost its status write, so
// each gap between the slots whose Jobs exist is passed over as that pass would have.
func passOver(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, d dueSlots, p *Plan, slot time.Time) {
	last := timeOf(sj.Status.LastScheduleTime)
	var ran []time.Time
	for _, j := range children {
		if s, ok := slotOf(sj, j, false); ok && s.Before(slot) && (last == nil || s.After(*last)) {
			ran = append(ran, s)
		}
	}
	slices.SortFunc(ran, time.Time.Compare)
	for _, s := range append(slices.Compact(ran), slot) {
		passOverGap(sj, d, p, last, s)
		last = &s
	}
}

// passOverGap passes over the slots after last (nil: since creation) and before slot.
func passOverGap(sj *v1alpha1.ScheduledJob, d dueSlots, p *Plan, last *time.Time, slot time.Time) {
	created, seenAt, deadline := sj.CreationTimestamp.Time, &p.Status.ObservedScheduleTime.Time, sj.Spec.StartingDeadlineSeconds // seenAt: set by the slot step
	earliestOK := schedule.Earliest(created, last, seenAt, deadline, d.slotNow, true)
	earliestAll := schedule.Earliest(created, last, seenAt, deadline, d.slotNow, false)
	// The Event names the slots within startingDeadlineSeconds, as before; the ledger records
	// the older ones too (a backfill may run them), under MissedDeadline when none is named.
	// Slots the ledger already lists were named by the pass that wrote them (a pass whose create
	// or delete then failed writes its status, and its retry must not name them again).
	first := passedOver(sj, d.sched, earliestOK, slot)
	if all := passedOver(sj, d.sched, earliestAll, slot); all != nil && (first == nil || all.Before(*first)) {
		recordNotRun(&p.Status, d.sched, *all, cmp.Or(first, &slot).Add(-time.Second), ReasonMissedDeadline)
	}
	if first == nil {
		return
	}
	upTo := slot.Add(-time.Second) // every slot before it
	if between, more := d.sched.Between(*first, slot, MaxBackfillSlots); len(between) > 0 && !more {
		upTo = between[len(between)-1]
	}
	reason := announcePassedOver(p, wasSuspended(sj), d.missed == schedule.ManyMissed, "Slots from %s up to %s were not run: only the most recent missed slot runs (%s)",
		formatSlot(*first, d.sched), formatSlot(slot, d.sched))
	recordNotRun(&p.Status, d.sched, *first, upTo, reason)
}

// announcePassedOver sends the Event that names slots passed over, counted in the metric, and
// returns its reason (Suspended is Normal: the user's choice). format ends with the cause's %s.
func announcePassedOver(p *Plan, suspended, many bool, format string, args ...any) string {
	ev := Event{corev1.EventTypeWarning, ReasonMissedSlots, "the controller was stopped or behind"}
	switch {
	case suspended:
		ev = Event{corev1.EventTypeNormal, ReasonSuspended, "the ScheduledJob was suspended"}
	case many:
		ev = Event{corev1.EventTypeWarning, ReasonTooManyMissedTimes, "too many missed start times: set or decrease .spec.startingDeadlineSeconds or check clock skew"}
	}
	ev.Note = fmt.Sprintf(format, append(args, ev.Note)...)
	p.Events = append(p.Events, ev)
	p.PassedOver = append(p.PassedOver, ev.Reason)
	return ev.Reason
}

// retryRefused reports whether slot, the last slot reported skipped, was refused and may be tried
// again: the spec changed since (Ready's generation), or admission refused it (its run in
// status.runs says so, and when) and its next try (retryRefusal) is due; before that it asks for
// a pass then. A refusal as invalid, or one the run history no longer holds, is final.
func retryRefused(sj *v1alpha1.ScheduledJob, d dueSlots, p *Plan, slot time.Time) bool {
	if sj.Status.LastSkippedTime == nil || !sj.Status.LastSkippedTime.Time.Equal(slot) {
		return false
	}
	if c := ready(&sj.Status); c.Reason == ReasonJobRejected && c.ObservedGeneration != sj.Generation {
		if r := InRanges(p.Status.NotRun, slot); r != nil && r.Reason == ReasonJobRejected {
			return true
		}
	}
	r := refusal(sj, slot, nil)
	if r == nil {
		return false
	}
	at, ok := retryRefusal(sj, d.sched, nil, slot, r.Message, r.CompletionTime.Time)
	now := d.slotNow.Add(slots.JitterOffset(sj))
	if ok && now.Before(at) {
		requeueWithin(p, at.Sub(now))
	}
	return ok && !now.Before(at)
}

// refusal is the run the status read records for slot's Job refused (after the time after, if
// set), with when and why; nil when there is none.
func refusal(sj *v1alpha1.ScheduledJob, slot time.Time, after *metav1.Time) *v1alpha1.ScheduledJobRun {
	i := slices.IndexFunc(sj.Status.Runs, func(r v1alpha1.ScheduledJobRun) bool {
		return r.JobName == "" && r.Reason == ReasonJobRejected && r.ScheduledTime.Time.Equal(slot) && r.CompletionTime != nil && (after == nil || !r.CompletionTime.Before(after))
	})
	if i < 0 {
		return nil
	}
	return &sj.Status.Runs[i]
}

// retryRefusal is when to create slot's Job again after the API server refused it at refusedAt
// with msg, and whether it is tried again at all: only a refusal at admission, while the run's
// window is open (jobstate.Window, docs/scheduling.md "One answer to a refusal"). A scheduled
// slot's window is from the slot (plus its jitter) until its startingDeadlineSeconds or the next
// slot. A backfill slot's (bf, the running backfill) opens at the request's last progress (its
// last Job created, or its acceptance), so the backoff grows with how long the backfill has been
// held, and stays open while the request stands.
func retryRefusal(sj *v1alpha1.ScheduledJob, sched schedule.Union, bf *v1alpha1.BackfillStatus, slot time.Time, msg string, refusedAt time.Time) (time.Time, bool) {
	if _, admission, _ := jobstate.Refusal(msg); !admission {
		return time.Time{}, false
	}
	if bf != nil {
		due := bf.StartTime.Time
		if bf.LastCreateTime != nil && bf.LastCreateTime.After(due) {
			due = bf.LastCreateTime.Time
		}
		return jobstate.Window{Due: due}.Retry(refusedAt)
	}
	end := sched.Next(slot)
	if dl := sj.Spec.StartingDeadlineSeconds; dl != nil {
		if e := slot.Add(time.Duration(*dl) * time.Second); end.IsZero() || e.Before(end) {
			end = e
		}
	}
	if end.IsZero() {
		return time.Time{}, false // the last slot of a schedule that ends: no window to stay within
	}
	offset := slots.JitterOffset(sj)
	return jobstate.Window{Due: slot.Add(offset), End: end.Add(offset)}.Retry(refusedAt)
}

// passedOver returns the first slot after earliest (and after the last reported skip), before
// slot, that status.notRun (as read) does not list, or nil: the start of the slots that passed
// without being run or reported.
func passedOver(sj *v1alpha1.ScheduledJob, sched schedule.Union, earliest time.Time, slot time.Time) *time.Time {
	from := earliest
	if ls := sj.Status.LastSkippedTime; ls != nil && ls.After(from) {
		from = ls.Time
	}
	for t := sched.Next(from); !t.IsZero() && t.Before(slot); {
		r := InRanges(sj.Status.NotRun, t)
		if r == nil {
			return &t
		}
		t = sched.Next(r.Last.Time)
	}
	return nil
}

// refusalRan reports whether a slot's Job exists at or after the newest slot the ledger lists
// as refused (none listed: any slot's Job): the refusal Ready names is no longer the latest
// slot's, whichever pass recorded the Job.
func refusalRan(sj *v1alpha1.ScheduledJob, children []*batchv1.Job) bool {
	var refused time.Time
	for _, r := range sj.Status.NotRun {
		if r.Reason == ReasonJobRejected && r.Last.After(refused) {
			refused = r.Last.Time
		}
	}
	return slices.ContainsFunc(children, func(j *batchv1.Job) bool {
		slot, ok := slotOf(sj, j, false)
		return ok && !slot.Before(refused)
	})
}

// NewJob builds a Job from the template, owned by the ScheduledJob, with the scheduled-timestamp
// annotation (in the schedule's time zone) that upstream sets.
func NewJob(sj *v1alpha1.ScheduledJob, name string, scheduled time.Time, loc *time.Location, token string) *batchv1.Job {
	job := jobstate.NewJob(sj, v1alpha1.GroupVersion.WithKind("ScheduledJob"), name, CreatedBy, sj.Spec.JobTemplate.ObjectMeta,
		*sj.Spec.JobTemplate.Spec.DeepCopy(), scheduled.In(loc).Format(time.RFC3339))
	if token != "" {
		job.Annotations[keys.AnnotationRunNowToken] = token
	}
	return job
}

// setReady sets the Ready condition and reports whether it changed (reason or message), so a
// Warning is emitted once per problem rather than per reconcile. Ready False (a bad schedule or
// zone, or the latest slot's Job refused) sets Stalled too, for kstatus (Flux, kpt, cli-utils:
// Failed, not Current), as a failed Job reads.
func setReady(sj *v1alpha1.ScheduledJob, st *v1alpha1.ScheduledJobStatus, status metav1.ConditionStatus, reason, msg string) bool {
	old := meta.FindStatusCondition(st.Conditions, ConditionReady)
	changed := old == nil || old.Status != status || old.Reason != reason || old.Message != msg
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: sj.Generation})
	if status == metav1.ConditionFalse {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionStalled, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: sj.Generation})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
	}
	return changed
}

// WasActive reports whether the status sj was read with lists the Job uid as active.
func WasActive(sj *v1alpha1.ScheduledJob, uid types.UID) bool {
	return slices.ContainsFunc(sj.Status.Active, func(a corev1.ObjectReference) bool { return a.UID == uid })
}

// oldest returns the Jobs beyond limit, oldest first (by start time, as upstream).
func oldest(js []*batchv1.Job, limit int32) []*batchv1.Job {
	n := len(js) - int(limit)
	if n <= 0 {
		return nil
	}
	sorted := slices.Clone(js)
	jobstate.SortByStartTime(sorted)
	return sorted[:n]
}

// activeRef is the reference to the active Job j: the one refs (an active list) has, known, so a
// Job's resourceVersion moving never causes a status write (as upstream), else a new one.
func activeRef(refs []corev1.ObjectReference, j *batchv1.Job) (ref corev1.ObjectReference, known bool) {
	if i := slices.IndexFunc(refs, func(a corev1.ObjectReference) bool { return a.UID == j.UID }); i >= 0 {
		return refs[i], true
	}
	return corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID, ResourceVersion: j.ResourceVersion}, false
}

// timeOf is t's time, nil when t is.
func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

func formatSlot(t time.Time, s schedule.Union) string {
	return t.In(s.Location()).Format(time.RFC3339)
}

// SortJobs orders Jobs by name, so plans do not depend on cache order.
func SortJobs(js []*batchv1.Job) {
	sort.Slice(js, func(a, b int) bool { return js[a].Name < js[b].Name })
}

// runHistoryLimit is spec.runHistoryLimit, 10 when unset.
func runHistoryLimit(sj *v1alpha1.ScheduledJob) int {
	return int(ptr.Deref(sj.Spec.RunHistoryLimit, 10))
}

// summaryMax is the longest status.scheduleSummary that lists every schedule.
const summaryMax = 128

// ScheduleSummary is status.scheduleSummary, the SCHEDULE column of `kubectl get sj`: the
// schedules joined with " | "; past summaryMax characters, the first of them and how many more.
func ScheduleSummary(sj *v1alpha1.ScheduledJob) string {
	all := slots.Schedules(sj)
	trimmed := make([]string, len(all))
	for i, s := range all {
		trimmed[i] = strings.TrimSpace(s)
	}
	if s := strings.Join(trimmed, " | "); len(s) <= summaryMax {
		return s
	}
	return fmt.Sprintf("%s (+%d more)", trimmed[0], len(trimmed)-1)
}
