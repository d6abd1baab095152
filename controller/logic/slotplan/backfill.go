package slotplan

// Backfill: the slots of a past range run on request, each once, as its own Job
// (docs/scheduling.md, "Backfill"). The cursor (status.backfill.nextSlot) moves past a slot only
// in the status write of the pass that got its Job, and the Job is not pruned before it has
// (ClaimRecorded).

import (
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/digest"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

// ConditionBackfill is True while a backfill is running, False with the reason once it finished,
// was refused or cancelled; absent until one is asked for.
const ConditionBackfill = "Backfill"

// Backfill condition and Event reasons.
const (
	ReasonBackfillRunning   = "BackfillRunning"
	ReasonBackfillFinished  = "BackfillFinished"
	ReasonBackfillRefused   = "BackfillRefused"
	ReasonBackfillCancelled = "BackfillCancelled"
)

// Bounds of a backfill request: whoever may annotate the ScheduledJob decides how many Jobs it
// asks for, so the count, the age and the pace are ours.
const (
	// MaxBackfillSlots is the most slots one request may name: a larger range is refused (the
	// message says how to split it), never silently cut.
	MaxBackfillSlots = 100
	// MaxBackfillAge is how far back from may lie.
	MaxBackfillAge = 31 * 24 * time.Hour
	// BackfillInterval is the least time between two backfill Jobs: 100 slots take 17 minutes.
	BackfillInterval = 10 * time.Second
	// maxBackfillRequest is the longest annotation value read (two RFC 3339 times and a slash
	// are at most 71 characters); a longer one is refused and kept as its digest.
	maxBackfillRequest = 128
)

// backfillKey is status.backfill.request for an annotation value (and status.backfill.schedule
// for the observed schedule): the value, or its digest when it is too long to keep (so it is
// refused once, not on every pass).
func backfillKey(value string) string {
	if len(value) > maxBackfillRequest {
		return digest.Of([]byte(value))
	}
	return value
}

// backfillRange parses and bounds a request at now: the range and the schedule's slots in it,
// or why it is refused.
func backfillRange(value string, now time.Time, sched schedule.Union) (from, to time.Time, slots []time.Time, err error) {
	if len(value) > maxBackfillRequest {
		return from, to, nil, fmt.Errorf("the value is %d characters long, more than %d: want <from>/<to>, two RFC 3339 times", len(value), maxBackfillRequest)
	}
	a, b, ok := strings.Cut(value, "/")
	if !ok {
		return from, to, nil, fmt.Errorf("%q is not <from>/<to>, two RFC 3339 times", value)
	}
	if from, err = time.Parse(time.RFC3339, strings.TrimSpace(a)); err != nil {
		return from, to, nil, fmt.Errorf("from %q is not an RFC 3339 time (2026-11-20T00:00:00Z)", a)
	}
	if to, err = time.Parse(time.RFC3339, strings.TrimSpace(b)); err != nil {
		return from, to, nil, fmt.Errorf("to %q is not an RFC 3339 time (2026-11-20T00:00:00Z)", b)
	}
	switch {
	case !from.Before(to):
		return from, to, nil, fmt.Errorf("from %s is not before to %s", a, b)
	case to.After(now):
		return from, to, nil, fmt.Errorf("to %s is in the future (now %s): a backfill runs past slots only", b, now.UTC().Format(time.RFC3339))
	case from.Before(now.Add(-MaxBackfillAge)):
		return from, to, nil, fmt.Errorf("from %s is more than %d days back", a, int(MaxBackfillAge.Hours()/24))
	}
	slots, more := sched.Between(from, to, MaxBackfillSlots)
	if more {
		all, more := sched.Between(from, to, maxCountedSlots)
		held := fmt.Sprint(len(all))
		if more {
			held = "more than " + held
		}
		return from, to, nil, fmt.Errorf("the range holds %s slots of the schedule, more than %d: ask for a shorter range (one request after the other)", held, MaxBackfillSlots)
	}
	return from, to, slots, nil
}

// maxCountedSlots bounds the count a refusal for size names (a minute schedule over 31 days has
// 44,640 slots).
const maxCountedSlots = 50000

// requestBackfill is the backfill step, after the due slot: it accepts (or refuses) a new
// request, or moves the running one on by at most one Job (a creation with backfill set;
// recordCreates moves the cursor).
func requestBackfill(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, now time.Time, d dueSlots, p *Plan) {
	value := sj.Annotations[keys.AnnotationBackfill]
	st := &p.Status
	bf := st.Backfill
	switch {
	case value == "":
		if bf != nil && bf.Phase == v1alpha1.BackfillRunning {
			endBackfill(sj, p, v1alpha1.BackfillCancelled, ReasonBackfillCancelled, fmt.Sprintf("Backfill %s cancelled (the annotation was removed): %d of %d slots done", bf.Request, bf.Done, bf.Slots))
		}
		return
	case bf == nil || bf.Request != backfillKey(value):
		from, to, slots, err := backfillRange(value, now, d.sched)
		if err != nil {
			msg := "Backfill refused: " + err.Error()
			st.Backfill = &v1alpha1.BackfillStatus{Request: backfillKey(value), Phase: v1alpha1.BackfillRefused, Message: runMessage(msg)}
			announceBackfill(sj, p, metav1.ConditionFalse, corev1.EventTypeWarning, ReasonBackfillRefused, msg)
			return
		}
		bf = &v1alpha1.BackfillStatus{Request: value, Phase: v1alpha1.BackfillRunning, Schedule: backfillKey(st.ObservedSchedule),
			From: &metav1.Time{Time: from}, To: &metav1.Time{Time: to}, StartTime: &metav1.Time{Time: now.Truncate(time.Second)}, Slots: int32(len(slots))}
		if st.Backfill != nil { // the pace is the ScheduledJob's: a new value starts no new interval
			bf.LastCreateTime = st.Backfill.LastCreateTime
		}
		if len(slots) > 0 {
			bf.NextSlot = &metav1.Time{Time: slots[0]}
		}
		st.Backfill = bf
		announceBackfill(sj, p, metav1.ConditionTrue, corev1.EventTypeNormal, ReasonBackfillRunning, fmt.Sprintf("Backfill %s started: %d slots", value, len(slots)))
		if bf.NextSlot == nil {
			finishBackfill(sj, p)
			return
		}
		// The request is accepted by a pass of its own, which writes status.backfill (its
		// startTime) and creates nothing: every backfill Job is created after a written
		// acceptance, so a Job found at the cursor after a crash is this request's if it was
		// created after startTime. The status write's watch event brings the next pass.
		requeueWithin(p, time.Second)
		return
	case bf.Phase != v1alpha1.BackfillRunning:
		return
	case bf.Schedule != backfillKey(st.ObservedSchedule):
		// The slots were the accepted schedule's: an edit of the schedule or time zone ends the
		// request, and the ledger (status.backfilled) keeps the slots it dealt with from running
		// again when the rest is asked for.
		endBackfill(sj, p, v1alpha1.BackfillCancelled, ReasonBackfillCancelled, fmt.Sprintf("Backfill %s cancelled (the schedule or time zone changed): %d of %d slots done; ask again for the rest, slots already run are not run again", bf.Request, bf.Done, bf.Slots))
		return
	}
	stepBackfill(sj, children, now, d, p)
}

// stepBackfill walks the running backfill's slots from its cursor, asking the ledger about each:
// a slot that had its run, or whose record is no longer known, is counted done and passed; the
// first that did not run gets a Job, unless backfillWait holds it back.
func stepBackfill(sj *v1alpha1.ScheduledJob, children []*batchv1.Job, now time.Time, d dueSlots, p *Plan) {
	bf := p.Status.Backfill
	for bf.NextSlot != nil {
		bf.NextSlot = slotFrom(d.sched, bf, bf.NextSlot.Time)
		if bf.NextSlot == nil {
			break
		}
		slot := bf.NextSlot.Time
		e := slotLedger(sj, &p.Status, children, slot)
		if e.State != SlotNotRun && e.State != SlotBeforeSchedule && e.State != SlotDue {
			// Its run happened (or cannot be told): on schedule, by an earlier request, or by
			// this one in a pass that died before its status write (a backfill Job created after
			// startTime, the manager's clock against the API server's: done counts it either way).
			bf.Done++
			if e.Job != nil && e.Job.Name == jobname.Backfill(sj, slot) && !e.Job.CreationTimestamp.Time.Before(bf.StartTime.Time) {
				bf.Created++
			}
			recordBackfilled(&p.Status, d.sched, slot)
			bf.NextSlot = slotFrom(d.sched, bf, slot.Add(time.Second))
			continue
		}
		// A Due slot waits for the scheduled path (backfillWait) unless none will run it. A slot
		// this request's create of was refused at admission (its run in status.runs says so, and
		// when) waits for its next try; one the run history no longer holds is tried now.
		r := refusal(sj, slot, bf.StartTime)
		if why, wait := backfillWait(sj, d, slot, now, p); wait || (r != nil && holdBackfill(sj, p, slot, r.Message, r.CompletionTime.Time, now)) {
			if why != "" {
				bf.Message = why
			}
			return
		}
		bf.Message = ""
		p.Creates = append(p.Creates, Creation{Job: NewJob(sj, jobname.Backfill(sj, slot), slot, d.sched.Location(), ""),
			backfill: &slot, backfillNext: slotFrom(d.sched, bf, slot.Add(time.Second)), at: now})
		requeueWithin(p, BackfillInterval)
		return
	}
	finishBackfill(sj, p)
}

// backfillWait reports whether the slot's Job waits (is not created in this pass), and why
// ("": the pace, the message stays what it was); it asks for the pass that can create it if no
// event will bring one.
func backfillWait(sj *v1alpha1.ScheduledJob, d dueSlots, slot, now time.Time, p *Plan) (string, bool) {
	bf := p.Status.Backfill
	switch {
	case slot.After(d.slotNow) || slices.ContainsFunc([]*time.Time{d.recentOK, d.recent}, func(s *time.Time) bool { return s != nil && s.Equal(slot) && !d.handled(s) }):
		// The scheduled path runs (or reports) this slot itself, in this pass or a later one: it
		// is still ahead, or the most recent slot, not yet decided.
		requeueWithin(p, BackfillInterval)
		return fmt.Sprintf("waiting for the scheduled run of %s", formatSlot(slot, d.sched)), true
	case len(p.Creates) > 0 || len(p.Replace) > 0:
		// One Job per pass: the scheduled slot or a run-now request goes first.
		requeueWithin(p, BackfillInterval)
		return "waiting for this pass's other run to start", true
	case bf.LastCreateTime != nil && now.Before(bf.LastCreateTime.Add(BackfillInterval)):
		requeueWithin(p, bf.LastCreateTime.Add(BackfillInterval).Sub(now))
		return "", true
	case sj.Spec.ConcurrencyPolicy != v1alpha1.AllowConcurrent && sj.Spec.ConcurrencyPolicy != "" && len(p.Status.Active) > 0:
		// Forbid and Replace: one run at a time, and a backfill never replaces one. The end
		// of the active Job brings the next pass.
		return fmt.Sprintf("waiting for %s to finish (concurrencyPolicy %s)", p.Status.Active[0].Name, sj.Spec.ConcurrencyPolicy), true
	}
	return "", false
}

// holdBackfill reports whether the running backfill stays on slot, its Job refused at refusedAt
// with msg, until its next try (retryRefusal) after now: the message says so, and a pass is asked
// for then.
func holdBackfill(sj *v1alpha1.ScheduledJob, p *Plan, slot time.Time, msg string, refusedAt, now time.Time) bool {
	at, ok := retryRefusal(sj, p.sched, p.Status.Backfill, slot, msg, refusedAt)
	if !ok || !now.Before(at) {
		return false
	}
	p.Status.Backfill.Message = fmt.Sprintf("the Job of %s was refused at admission; tried again at %s", formatSlot(slot, p.sched), at.UTC().Format(time.RFC3339))
	requeueWithin(p, at.Sub(now))
	return true
}

// slotFrom is the first slot at or after t within the backfill's range, or nil. Slots fall on
// whole seconds: the slot after slot is slotFrom(slot + 1s).
func slotFrom(sched schedule.Union, bf *v1alpha1.BackfillStatus, t time.Time) *metav1.Time {
	if t.Before(bf.From.Time) {
		t = bf.From.Time
	}
	slots, _ := sched.Between(t, bf.To.Time, 1)
	if len(slots) == 0 {
		return nil
	}
	return &metav1.Time{Time: slots[0]}
}

// finishBackfill ends the running backfill: every slot of its range is done.
func finishBackfill(sj *v1alpha1.ScheduledJob, p *Plan) {
	bf := p.Status.Backfill
	endBackfill(sj, p, v1alpha1.BackfillFinished, ReasonBackfillFinished, fmt.Sprintf("Backfill %s finished: %d slots, %d Jobs created, %d had run already or were refused", bf.Request, bf.Slots, bf.Created, bf.Done-bf.Created))
}

// endBackfill ends the running backfill in phase, with the condition and a Normal Event.
func endBackfill(sj *v1alpha1.ScheduledJob, p *Plan, phase v1alpha1.BackfillPhase, reason, msg string) {
	bf := p.Status.Backfill
	bf.Phase, bf.NextSlot, bf.Message = phase, nil, ""
	announceBackfill(sj, p, metav1.ConditionFalse, corev1.EventTypeNormal, reason, msg)
}

// recordBackfill records the API server's answer to a backfill create (recordCreates): a Job
// created or adopted, a refusal as invalid or a name taken, each ends the slot, and the cursor
// moves on. A refusal at admission keeps the cursor on the slot, tried again as retryRefusal
// says (refusedRun has recorded it).
func recordBackfill(sj *v1alpha1.ScheduledJob, p *Plan, res CreateResult, now time.Time) {
	bf := p.Status.Backfill
	if bf == nil || bf.Phase != v1alpha1.BackfillRunning || res.Ev.Reason == ReasonJobRejected && holdBackfill(sj, p, *res.backfill, res.Ev.Note, now.Truncate(time.Second), now) {
		return
	}
	bf.Done++
	if res.Got != nil {
		bf.Created++
		bf.LastCreateTime = &metav1.Time{Time: res.at}
		dropNotRun(&p.Status, *res.backfill) // a slot refused before: it ran
	}
	recordBackfilled(&p.Status, p.sched, *res.backfill)
	bf.NextSlot = res.backfillNext
	if bf.NextSlot == nil {
		finishBackfill(sj, p)
	}
}

// announceBackfill sets the Backfill condition and sends the Event (of type kind) that says the same.
func announceBackfill(sj *v1alpha1.ScheduledJob, p *Plan, status metav1.ConditionStatus, kind, reason, msg string) {
	meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: ConditionBackfill, Status: status, Reason: reason, Message: runMessage(msg), ObservedGeneration: sj.Generation})
	p.Events = append(p.Events, Event{kind, reason, msg})
}

// requeueWithin makes p look again within d (d > 0).
func requeueWithin(p *Plan, d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if p.RequeueAfter == 0 || d < p.RequeueAfter {
		p.RequeueAfter = d
	}
}

func jobNamed(js []*batchv1.Job, name string) *batchv1.Job {
	if i := slices.IndexFunc(js, func(j *batchv1.Job) bool { return j.Name == name }); i >= 0 {
		return js[i]
	}
	return nil
}
