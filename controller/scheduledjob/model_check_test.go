package scheduledjob

// The ledger of the model-based test: what the API server accepted and answered, what every
// status the API server held and every Event said about each slot, and the invariants over them.
//
// Readings chosen where the invariants of issue 43 are open to more than one:
//   - A slot is an instant. Its Jobs are the Jobs whose scheduled-time annotation names it, under
//     its slot name, its legacy name or its backfill name (jobname.Slot, LegacySlotName,
//     BackfillName); a run-now Job belongs to its token, not to a slot.
//   - "Due since creation while not suspended": a slot of the schedule (and time zone) the spec
//     had at that instant, after the ScheduledJob's creation, after the edit that brought that
//     schedule and after the status first recorded it (observedScheduleTime: slots before the
//     controller saw a schedule never run, as upstream), while spec.suspend was false, up to the
//     end of the walk. The spec's history is taken from the API server after every write.
//   - A slot's outcome is one of: a Job under its slot name, a Skipped run in status.runs
//     (JobAlreadyActive, MissedDeadline), being named in a MissedSlots / Suspended Event (passed
//     over), or a JobRejected run (the API server refused its Job). Each is evidence once seen in
//     any status the API server held (the run history is capped, so evidence is collected after
//     every pass, not read at the end) or in any Event sent. A refusal may be followed by one more
//     outcome (the documented retry after an edit of the spec); any other two outcomes of one slot
//     are a violation, and so is none. A slot recorded Skipped for another reason is never tried
//     again: a create of its scheduled Job after that is a violation even if the API server refuses
//     it. A backfill Job is the user's second request for a slot, not
//     its outcome: it only must not be a second Job of the slot.
//   - A walk that ends suspended does not check the slot the controller was still deciding when
//     the suspension began (the last slot before it, undecided then: e.g. Replace waiting on a
//     refused delete): it is decided at resume, run or named Suspended, which the walk does not
//     reach.
//   - TooManyMissedTimes names no slot: it accounts for every slot before it that has no other
//     outcome.
//   - A JobAlreadyActive skip is true if an unfinished Job of the ScheduledJob existed before or
//     after the pass that recorded it.
//   - Two unfinished Jobs: checked at every Job create the API server accepts, when both the spec
//     the API server has and the spec the creating pass read say Forbid or Replace.
//   - The backfill bound: the backfill Jobs created while the annotation holds one value are at
//     most the slots status.backfill.slots said when that value was accepted (MaxBackfillSlots if
//     no status said so).
//   - A backfill Job is a slot of the schedules and time zone its request was accepted under: the
//     status.observedSchedule of the status write that accepted it (the request and startTime the
//     creating pass read name that acceptance).
//   - Refusals: a refused create of a slot (scheduled or backfill) or a run-now token must end in
//     a JobRejected run in some status, or in a Job created later; a backfill refusal whose request
//     was replaced, removed or cancelled (an edit of the schedule or time zone) afterwards is
//     exempt: the request ended, and asking again runs the slot. A refused slot that a status
//     recorded (a JobRejected run, or notRun) must still be recorded in the last status's notRun,
//     whatever became of its request: the run history drops a JobRejected run at its limit. Exempt
//     from both: a refused slot at or before the final status.notRunKnownAfter (the ledger's bound
//     dropped its record: 20 ranges, and an edit keeps only each range's ends; the JobRejected
//     Warning Event is its record), and one inside a notRun range when a status observed an edit
//     of the schedule or time zone (sealNotRun keeps only each range's ends), until a status lists
//     it again.
//   - The stop strategy: a run starts when its Job is created (the world's Job controller sets
//     status.startTime at once) or its create is refused. While the API server's status.stop
//     names the spec's own generation, no Job is created or tried (job-created-while-stopped).
//     A stop a status shows for the first time needs the stop strategy it names in the spec and
//     at least that many runs ended that way (failed or refused; succeeded) among those started
//     after the previous stop, hence after the resume (stopped-by-runs-before-the-resume): that
//     they are consecutive is not checked (see checkStop). At the end, after a pass without
//     faults, no stop of an older generation is left (stop-outlives-its-spec).

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
	"github.com/platform-operators/platform-operators/controller/logic/slots"
)

// maxStatusBytes bounds the serialized status.
const maxStatusBytes = 8 << 10

// violation is one invariant broken.
type violation struct {
	class string
	step  int
	msg   string
}

// epoch is a stretch of time over which the spec's schedule, time zone and suspend held.
type epoch struct {
	start, end time.Time // end zero: still holds
	schedules  []string
	tz         string
	suspended  bool
	// observed is the status's observedScheduleTime for this schedule, once a status recorded
	// it while the epoch held (nil: the controller never recorded it).
	observed *time.Time
}

func (e *epoch) key() string {
	return fmt.Sprintf("%s %q %v", e.tz, e.schedules, e.suspended)
}

// observedString is status.observedSchedule for a spec (findSlots).
func observedString(sj *v1alpha1.ScheduledJob) string {
	return ptr.Deref(sj.Spec.TimeZone, "") + " " + strings.Join(slots.Schedules(sj), " | ")
}

type slotKind int

const (
	kindNotOurs slotKind = iota
	kindScheduled
	kindBackfill
	kindRunNow
)

// ledger is one walk's record.
type ledger struct {
	step      int
	createdAt time.Time
	epochs    []*epoch
	jobsOf    map[int64][]string // slot → names of its Jobs created (slot, legacy, backfill)
	schedJob  map[int64]bool     // slot → a Job under its slot or legacy name was created
	tokenJobs map[string][]string
	// refusedSlots: slot → the backfill request in effect ("" for a scheduled slot) at a
	// refused create; refusedTokens: token → the run-now Job's time.
	refusedSlots  map[int64][]string
	refusedTokens map[string]time.Time
	skips         map[int64]map[string]bool // slot → Skipped reasons seen in a status
	rejected      map[int64]bool            // slot (or run-now time) → a JobRejected run seen
	// notRun are the ranges status.notRun listed (slots that got no Job: skipped, refused,
	// passed over, or past their deadline, which no Event names).
	notRun     []v1alpha1.SlotRange
	passed     map[int64]string // slot → the Event that named it passed over
	tooMany    []time.Time
	bfCount    map[string]int
	bfBound    map[string]int
	bfReported map[string]bool
	// bfAccepted: a backfill request and its startTime (acceptanceKey) → status.observedSchedule
	// when it was accepted (the schedules and time zone its slots are of).
	bfAccepted map[string]string
	// sealed: refused slots inside a status.notRun range when an edit of the schedule or time
	// zone was observed (sealNotRun keeps only each range's ends), until a status lists them
	// again; prev: the status read after the pass before.
	sealed map[int64]bool
	prev   v1alpha1.ScheduledJobStatus
	// createdInPass: a Job was created by the current pass.
	createdInPass bool
	// The stop strategy's own record: the runs the walk started (a Job the API server stored, a
	// create it refused), each with the number of passes done before the pass that started it,
	// and how each Job ended (the walk's finish step); stopAt: the passes done when a status
	// last showed a new stop (0: none yet).
	passesDone int
	jobRuns    map[string]*modelRun
	refusals   []int
	stopAt     int
	violations []violation
}

// modelRun is a Job's run as the stop strategy counts it: the pass that created it, and how it
// ended ("" while it runs).
type modelRun struct {
	pass   int
	result v1alpha1.RunResult
}

func newLedger(created time.Time) *ledger {
	return &ledger{createdAt: created, jobsOf: map[int64][]string{}, schedJob: map[int64]bool{}, tokenJobs: map[string][]string{},
		refusedSlots: map[int64][]string{}, refusedTokens: map[string]time.Time{}, skips: map[int64]map[string]bool{},
		rejected: map[int64]bool{}, passed: map[int64]string{}, bfCount: map[string]int{}, bfBound: map[string]int{},
		bfReported: map[string]bool{}, bfAccepted: map[string]string{}, sealed: map[int64]bool{}, jobRuns: map[string]*modelRun{}}
}

func (l *ledger) violate(class, format string, args ...any) {
	l.violations = append(l.violations, violation{class: class, step: l.step, msg: fmt.Sprintf(format, args...)})
}

// classify names what a Job of sj is: a scheduled slot's, a backfill's, a run-now token's.
func classify(sj *v1alpha1.ScheduledJob, j *batchv1.Job) (slotKind, time.Time, string) {
	slot, err := time.Parse(time.RFC3339, j.Annotations[jobstate.ScheduledTimeAnnotation])
	if token, ok := j.Annotations[keys.AnnotationRunNowToken]; ok {
		return kindRunNow, slot, token
	}
	if err != nil {
		return kindNotOurs, slot, ""
	}
	switch j.Name {
	case jobname.Slot(sj, slot), jobname.LegacySlot(sj.Name, slot):
		return kindScheduled, slot, ""
	case jobname.Backfill(sj, slot):
		return kindBackfill, slot, ""
	}
	return kindNotOurs, slot, ""
}

func modelUnfinished(js []batchv1.Job, except string) []string {
	var out []string
	for i := range js {
		if done, _, _ := jobstate.Finished(&js[i]); !done && js[i].Name != except && js[i].DeletionTimestamp == nil {
			out = append(out, js[i].Name)
		}
	}
	return out
}

func oneRunAtATime(p v1alpha1.ConcurrencyPolicy) bool {
	return p == v1alpha1.ForbidConcurrent || p == v1alpha1.ReplaceConcurrent
}

// refused records a 403 for a Job create.
func (l *ledger) refused(w *modelWorld, j *batchv1.Job) {
	sj := w.sj()
	l.refusals = append(l.refusals, l.passesDone)
	l.createWhileStopped(w, sj, j, "refused by the API server")
	kind, slot, token := classify(sj, j)
	switch kind {
	case kindScheduled:
		l.refusedSlots[slot.Unix()] = append(l.refusedSlots[slot.Unix()], "")
		// A slot whose skip a written status recorded (JobAlreadyActive, MissedDeadline) is
		// never tried again: only a refused slot is. Refused or not, the create is the defect.
		for reason := range l.skips[slot.Unix()] {
			if reason != slotplan.ReasonJobRejected {
				l.violate("skipped-slot-tried-again", "slot %s was recorded Skipped (%s); its Job %s was then created (refused by the API server)", fmtT(w, slot), reason, j.Name)
				break
			}
		}
	case kindBackfill:
		l.refusedSlots[slot.Unix()] = append(l.refusedSlots[slot.Unix()], "backfill "+sj.Annotations[keys.AnnotationBackfill])
	case kindRunNow:
		l.refusedTokens[token] = slot
	}
}

// created records a Job create the API server accepted, and checks the invariants of a create.
func (l *ledger) created(w *modelWorld, j *batchv1.Job) {
	l.createdInPass = true
	sj := w.sj()
	l.jobRuns[j.Name] = &modelRun{pass: l.passesDone}
	l.createWhileStopped(w, sj, j, "created")
	kind, slot, token := classify(sj, j)
	switch kind {
	case kindNotOurs:
		l.violate("job-not-of-a-slot", "created Job %s whose name names no slot, backfill or run-now token", j.Name)
	case kindRunNow:
		if prev := l.tokenJobs[token]; len(prev) > 0 {
			l.violate("run-now-token-run-twice", "run-now token %q got Job %s after %v", token, j.Name, prev)
		}
		l.tokenJobs[token] = append(l.tokenJobs[token], j.Name)
	default:
		if prev := l.jobsOf[slot.Unix()]; len(prev) > 0 {
			l.violate("slot-run-twice", "slot %s got Job %s after %v", fmtT(w, slot), j.Name, prev)
		}
		l.jobsOf[slot.Unix()] = append(l.jobsOf[slot.Unix()], j.Name)
		if kind == kindScheduled {
			l.schedJob[slot.Unix()] = true
		}
		if rng, ok := l.passedRange(slot.Unix()); ok && kind == kindScheduled {
			l.violate("job-for-a-slot-reported-passed-over", "slot %s got Job %s after an Event said it was not run (%s)", fmtT(w, slot), j.Name, rng)
		}
	}
	if kind == kindBackfill {
		v := sj.Annotations[keys.AnnotationBackfill]
		l.bfCount[v]++
		bound, ok := l.bfBound[v]
		if !ok {
			bound = slotplan.MaxBackfillSlots
		}
		if l.bfCount[v] > bound && !l.bfReported[v] {
			l.bfReported[v] = true
			l.violate("backfill-over-its-slots", "backfill %q created %d Jobs, its request had %d slots", v, l.bfCount[v], bound)
		}
		// The request the creating pass read names its acceptance (request and startTime).
		if bf := w.readBackfill; bf != nil && bf.StartTime != nil {
			if observed, ok := l.bfAccepted[acceptanceKey(bf)]; ok && !slotOfObserved(observed, slot) {
				l.violate("backfill-job-not-a-slot-of-its-request", "backfill %q, accepted under %q, created Job %s: %s is not a slot of that schedule and time zone",
					bf.Request, observed, j.Name, fmtT(w, slot))
			}
		}
	}
	if others := modelUnfinished(w.jobs(), j.Name); len(others) > 0 && oneRunAtATime(sj.Spec.ConcurrencyPolicy) && oneRunAtATime(w.readPolicy) {
		l.violate("two-unfinished-jobs", "concurrencyPolicy %s: created %s while %v had not finished", sj.Spec.ConcurrencyPolicy, j.Name, others)
	}
}

// createWhileStopped checks a Job create (accepted or refused) against the stop: while the API
// server's status records a stop of the spec it holds (status.stop.generation), no Job is created,
// for a slot, a run-now or a backfill (a pass that resumes reads a newer generation).
func (l *ledger) createWhileStopped(w *modelWorld, sj *v1alpha1.ScheduledJob, j *batchv1.Job, what string) {
	if s := sj.Status.Stop; s != nil && s.Generation == sj.Generation {
		l.violate("job-created-while-stopped", "Job %s %s while status.stop (%s at %s, generation %d) stops the spec of generation %d",
			j.Name, what, s.Reason, tstr(s.Time), s.Generation, sj.Generation)
	}
}

// finished records how the walk ended a Job.
func (l *ledger) finished(name string, succeeded bool) {
	if r := l.jobRuns[name]; r != nil {
		r.result = v1alpha1.RunFailed
		if succeeded {
			r.result = v1alpha1.RunSucceeded
		}
	}
}

// checkStop checks a stop a status shows for the first time: the spec has the stop strategy
// it names, and at least its number of runs ended that way (a Job failed or succeeded, or, for
// failures, a create refused) among the runs started after the previous stop. No run starts
// while stopped (job-created-while-stopped), so those are the runs started after the resume:
// the runs that stopped it before, and those still running then, never count again
// (docs/scheduling.md, "Stop after failures"). Whether they are consecutive is not checked:
// the controller reads the streak in slot order from a capped history, whose records a Job
// pruned by its TTL before its result was recorded leaves without that result.
func (l *ledger) checkStop(w *modelWorld, sj *v1alpha1.ScheduledJob, st v1alpha1.ScheduledJobStatus) {
	s, prev := st.Stop, l.prev.Stop
	if s == nil || prev != nil && prev.Reason == s.Reason && prev.Generation == s.Generation && sameTime(prev.Time, s.Time) {
		return
	}
	after := l.stopAt
	l.stopAt = l.passesDone
	if s.Generation != sj.Generation {
		return // the spec changed since: not the spec it read
	}
	var want *int32
	result := v1alpha1.RunFailed
	if ss := sj.Spec.StopStrategy; ss != nil {
		switch s.Reason {
		case slotplan.ReasonStoppedAfterFailures:
			want = ss.AfterFailures
		case slotplan.ReasonStoppedAfterSuccesses:
			want, result = ss.AfterSuccesses, v1alpha1.RunSucceeded
		}
	}
	if want == nil {
		l.violate("stop-without-its-strategy", "status.stop says %s, but the spec of generation %d has stopStrategy %s", s.Reason, sj.Generation, stopString(sj.Spec.StopStrategy))
		return
	}
	var names []string
	for name, r := range l.jobRuns {
		if r.pass >= after && r.result == result {
			names = append(names, name)
		}
	}
	refused := 0
	if result == v1alpha1.RunFailed {
		for _, pass := range l.refusals {
			if pass >= after {
				refused++
			}
		}
	}
	if n := len(names) + refused; n < int(*want) {
		since := "since the ScheduledJob was created"
		if after > 0 {
			since = "since the previous stop"
		}
		sort.Strings(names)
		l.violate("stopped-by-runs-before-the-resume", "%s recorded (stopStrategy %s), but only %d runs %s ended %s (Jobs %v, %d refused creates): the runs counted include ones started before the resume",
			s.Reason, stopString(sj.Spec.StopStrategy), n, since, result, names, refused)
	}
}

func sameTime(a, b *metav1.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(b)
}

// acceptanceKey names one acceptance of a backfill request: a value asked for again after
// another is accepted again, maybe under another schedule.
func acceptanceKey(bf *v1alpha1.BackfillStatus) string {
	return bf.Request + "@" + bf.StartTime.UTC().Format(time.RFC3339)
}

// slotOfObserved reports whether t is a slot of the schedules in the time zone that a
// status.observedSchedule names (slots.Observed: the zone, a space, the schedules joined by " | ").
func slotOfObserved(observed string, t time.Time) bool {
	tz, schedules, _ := strings.Cut(observed, " ")
	return slices.ContainsFunc(slotsOf(strings.Split(schedules, " | "), tz, t.Add(-time.Second), t), t.Equal)
}

func (l *ledger) passedRange(slot int64) (string, bool) {
	r, ok := l.passed[slot]
	return r, ok
}

// claimRecorded is the model's own reading of when a Job is no longer the only trace of its
// run (for the TTL): the written status records its slot, token or backfill step.
func (l *ledger) claimRecorded(w *modelWorld, j *batchv1.Job) bool {
	sj := w.sj()
	st := sj.Status
	kind, slot, token := classify(sj, j)
	switch kind {
	case kindScheduled:
		return st.LastScheduleTime != nil && !slot.After(st.LastScheduleTime.Time)
	case kindRunNow:
		return st.LastRunNowToken == token
	case kindBackfill:
		bf := st.Backfill
		return bf != nil && (bf.Phase != v1alpha1.BackfillRunning || bf.NextSlot != nil && slot.Before(bf.NextSlot.Time))
	}
	return false
}

// specWrite follows the spec's history: a changed schedule, time zone or suspend starts an epoch.
func (l *ledger) specWrite(w *modelWorld, _ string) { l.specWriteOf(w, w.sj()) }

func (l *ledger) specWriteOf(w *modelWorld, sj *v1alpha1.ScheduledJob) {
	// Stopped by the stop strategy (status.stop) is suspended as far as slots go.
	e := &epoch{start: w.clock.Now(), schedules: slices.Clone(slots.Schedules(sj)), tz: ptr.Deref(sj.Spec.TimeZone, ""), suspended: ptr.Deref(sj.Spec.Suspend, false) || sj.Status.Stop != nil}
	if n := len(l.epochs); n > 0 {
		last := l.epochs[n-1]
		if last.key() == e.key() {
			return
		}
		last.end = e.start
		if last.schedulesKey() == e.schedulesKey() {
			e.observed = last.observed // a suspend toggle: the schedule stays observed
		}
	}
	l.epochs = append(l.epochs, e)
}

func (e *epoch) schedulesKey() string { return fmt.Sprintf("%s %q", e.tz, e.schedules) }

// afterPass reads what the pass left in the API server: the status's size and its evidence.
func (l *ledger) afterPass(w *modelWorld, sj *v1alpha1.ScheduledJob, js []batchv1.Job, activeBefore []string) {
	l.passesDone++
	l.specWriteOf(w, sj)
	st := sj.Status
	if b, err := json.Marshal(st); err != nil || len(b) >= maxStatusBytes {
		size := func(v any) int {
			b, err := json.Marshal(v)
			if err != nil {
				return -1
			}
			return len(b)
		}
		l.violate("status-too-large", "status is %d bytes (err %v), bound %d: runs %d (%d entries), conditions %d, active %d (%d entries), backfill %d",
			len(b), err, maxStatusBytes, size(st.Runs), len(st.Runs), size(st.Conditions), size(st.Active), len(st.Active), size(st.Backfill))
	}
	cur := l.epochs[len(l.epochs)-1]
	if cur.observed == nil && st.ObservedScheduleTime != nil && st.ObservedSchedule == observedString(sj) {
		t := st.ObservedScheduleTime.Time
		cur.observed = &t
	}
	if bf := st.Backfill; bf != nil && bf.Phase == v1alpha1.BackfillRunning && bf.Request == sj.Annotations[keys.AnnotationBackfill] {
		if _, ok := l.bfBound[bf.Request]; !ok {
			l.bfBound[bf.Request] = int(bf.Slots)
		}
	}
	if bf := st.Backfill; bf != nil && bf.Phase == v1alpha1.BackfillRunning && bf.StartTime != nil {
		if _, ok := l.bfAccepted[acceptanceKey(bf)]; !ok {
			l.bfAccepted[acceptanceKey(bf)] = st.ObservedSchedule // the acceptance's own status write
		}
	}
	for s := range l.sealed {
		if slotplan.InRanges(st.NotRun, time.Unix(s, 0)) != nil {
			delete(l.sealed, s) // recorded again: the record must last again
		}
	}
	if l.prev.ObservedSchedule != "" && st.ObservedSchedule != l.prev.ObservedSchedule {
		for s := range l.refusedSlots { // sealNotRun: a range's inside is no longer recorded
			if r := slotplan.InRanges(l.prev.NotRun, time.Unix(s, 0)); r != nil && r.First.Unix() != s && r.Last.Unix() != s {
				l.sealed[s] = true
			}
		}
	}
	l.checkStop(w, sj, st)
	l.prev = st
	l.readyTrue(w, st)
	activeAfter := modelUnfinished(js, "")
	// The ledger's lasting record of refused slots (status.runs keeps only runHistoryLimit).
	l.notRun = append(l.notRun, st.NotRun...)
	for _, r := range st.NotRun {
		if r.Reason == slotplan.ReasonJobRejected {
			for t := r.First.Time; !t.After(r.Last.Time); t = t.Add(time.Minute) {
				l.rejected[t.Unix()] = true
			}
		}
	}
	for _, r := range st.Runs {
		s := r.ScheduledTime.Unix()
		switch {
		case r.Reason == slotplan.ReasonJobRejected && r.JobName == "":
			l.rejected[s] = true
		case r.Result == v1alpha1.RunSkipped && r.JobName == "":
			if l.skips[s] == nil {
				l.skips[s] = map[string]bool{}
			}
			if !l.skips[s][r.Reason] {
				l.skips[s][r.Reason] = true
				if r.Reason == slotplan.ReasonJobAlreadyActive && len(activeBefore) == 0 && len(activeAfter) == 0 && !l.createdInPass {
					l.violate("false-JobAlreadyActive", "slot %s recorded skipped as JobAlreadyActive, but no Job was active before or after the pass", fmtT(w, r.ScheduledTime.Time))
				}
				if l.schedJob[s] {
					l.violate("skip-recorded-for-a-slot-that-ran", "slot %s recorded Skipped (%s) although its Job %v was created", fmtT(w, r.ScheduledTime.Time), r.Reason, l.jobsOf[s])
				}
			}
		}
	}
	l.createdInPass = false
}

// readyTrue checks what Ready=False JobRejected claims: the newest scheduled slot whose Job the
// API server refused has no recorded run after it (a refused run-now or backfill Job leaves
// Ready alone; the pass that records a later slot's Job sets it back).
func (l *ledger) readyTrue(w *modelWorld, st v1alpha1.ScheduledJobStatus) {
	c := meta.FindStatusCondition(st.Conditions, slotplan.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != slotplan.ReasonJobRejected {
		return
	}
	newest := int64(-1)
	for s, requests := range l.refusedSlots {
		if slices.Contains(requests, "") && s > newest {
			newest = s
		}
	}
	switch {
	case newest < 0:
		l.violate("false-ready-JobRejected", "Ready is False, JobRejected, but the API server refused no scheduled slot's Job: %q", c.Message)
	case st.LastScheduleTime != nil && st.LastScheduleTime.Unix() > newest:
		l.violate("false-ready-JobRejected", "Ready is False, JobRejected, but slot %s ran after the newest refused slot %s: %q",
			fmtT(w, st.LastScheduleTime.Time), fmtT(w, time.Unix(newest, 0)), c.Message)
	}
}

// event reads an Event the Reconciler sent.
func (l *ledger) event(w *modelWorld, _, reason, note string) {
	switch reason {
	case slotplan.ReasonTooManyMissedTimes:
		l.tooMany = append(l.tooMany, w.clock.Now())
	case slotplan.ReasonMissedSlots, slotplan.ReasonSuspended:
		var from, upTo string
		if _, err := fmt.Sscanf(note, "Slots from %s up to %s were not run", &from, &upTo); err != nil {
			return // Suspended is also Ready's Event (no slots named)
		}
		a, errA := time.Parse(time.RFC3339, from)
		b, errB := time.Parse(time.RFC3339, upTo)
		if errA != nil || errB != nil {
			l.violate("unreadable-passed-over-event", "%s: %q", reason, note)
			return
		}
		for _, s := range l.slotsBetween(a.Add(-time.Second), b.Add(-time.Second)) {
			if names := l.jobsOf[s.Unix()]; len(names) > 0 {
				l.violate("false-"+reason, "%s Event names slot %s, whose Job %v exists: %q", reason, fmtT(w, s), names, note)
			}
			if _, ok := l.passed[s.Unix()]; !ok {
				l.passed[s.Unix()] = reason
			}
		}
	}
}

// slotsBetween lists the slots in (from, to] of the schedule that held at each instant: an Event
// sent after an edit (the schedule was edited before they were handled) names the old
// schedule's slots.
func (l *ledger) slotsBetween(from, to time.Time) []time.Time {
	var out []time.Time
	for _, e := range l.epochs {
		a, b := from, to
		if e.start.After(a) {
			a = e.start.Add(-time.Nanosecond) // a slot at the instant the epoch began is its own
		}
		if !e.end.IsZero() && !e.end.After(b) {
			b = e.end.Add(-time.Nanosecond) // a slot at the instant of an edit belongs to neither
		}
		if b.After(a) {
			out = append(out, slotsOf(e.schedules, e.tz, a, b)...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return slices.CompactFunc(out, func(a, b time.Time) bool { return a.Equal(b) })
}

// slotsOf lists the slots of the schedules in tz in (from, to].
func slotsOf(schedules []string, tz string, from, to time.Time) []time.Time {
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil
	}
	var out []time.Time
	for _, spec := range schedules {
		s, err := cron.ParseStandard(spec)
		if err != nil {
			continue
		}
		for t := s.Next(from.In(loc)); !t.IsZero() && !t.After(to); t = s.Next(t) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Before(out[b]) })
	return slices.CompactFunc(out, func(a, b time.Time) bool { return a.Equal(b) })
}

// decidedSoFar reports whether slot s has any outcome yet.
func (l *ledger) decidedSoFar(s time.Time) bool {
	k := s.Unix()
	_, passed := l.passed[k]
	return l.schedJob[k] || len(l.skips[k]) > 0 || passed || l.rejected[k] || slotplan.InRanges(l.notRun, s) != nil
}

// final checks, at the end of a walk (after a pass without faults), that every slot due has
// exactly one outcome and that no refusal was dropped.
func (l *ledger) final(w *modelWorld) {
	end := w.clock.Now()
	sj := w.sj()
	if s := sj.Status.Stop; s != nil && s.Generation != sj.Generation {
		l.violate("stop-outlives-its-spec", "the last status still records the stop of generation %d (%s); the spec is at generation %d, which resumes it", s.Generation, s.Reason, sj.Generation)
	}
	last := l.epochs[len(l.epochs)-1]
	for _, e := range l.epochs {
		if e.suspended || e.observed == nil {
			continue
		}
		// The walk ends suspended: the slot the controller was still deciding when the
		// suspension began (the epoch's last) is decided when the ScheduledJob resumes (run, or
		// named Suspended), which the walk does not reach.
		pendingAtSuspension := time.Time{}
		if last.suspended && last != e && e.end.Equal(last.start) {
			if ss := slotsOf(e.schedules, e.tz, e.start, e.end.Add(-time.Nanosecond)); len(ss) > 0 {
				pendingAtSuspension = ss[len(ss)-1]
			}
		}
		from := e.start
		for _, t := range []time.Time{l.createdAt, *e.observed} {
			if t.After(from) {
				from = t
			}
		}
		to := end
		if !e.end.IsZero() && e.end.Before(to) {
			to = e.end.Add(-time.Nanosecond) // a slot at the instant of an edit belongs to neither
		}
		for _, s := range slotsOf(e.schedules, e.tz, from, to) {
			if !s.After(from) || (s.Equal(pendingAtSuspension) && !l.decidedSoFar(s)) {
				continue
			}
			l.checkSlot(w, s)
		}
	}
	// A backfill an edit of the schedule or time zone cancelled ends as the user's removal does.
	cancelled := sj.Status.Backfill != nil && sj.Status.Backfill.Phase == v1alpha1.BackfillCancelled
	knownAfter := sj.Status.NotRunKnownAfter
	for s, requests := range l.refusedSlots {
		if len(l.jobsOf[s]) > 0 || slotplan.InRanges(sj.Status.NotRun, time.Unix(s, 0)) != nil || l.sealed[s] {
			continue
		}
		if knownAfter != nil && !time.Unix(s, 0).After(knownAfter.Time) {
			continue // older than the ledger keeps: its Warning Event is its record
		}
		if l.rejected[s] {
			// A status recorded the refusal: the record must last, in the last status's notRun
			// (the run history drops a JobRejected run at its limit), whatever became of the
			// request.
			l.violate("refusal-record-lost", "the API server refused the Job of slot %s (%s); a status recorded it, but no Job ran and the last status's notRun does not list it",
				fmtT(w, time.Unix(s, 0)), orScheduled(requests[len(requests)-1]))
			continue
		}
		for _, req := range slices.Backward(requests) { // the latest refusal first
			if req != "" && (req != "backfill "+sj.Annotations[keys.AnnotationBackfill] || cancelled) {
				continue // the backfill was replaced, removed or cancelled after the refusal
			}
			class := "refusal-dropped"
			if req != "" {
				class = "backfill-refusal-dropped"
			}
			l.violate(class, "the API server refused the Job of slot %s (%s); no status recorded the refusal and no Job ran", fmtT(w, time.Unix(s, 0)), orScheduled(req))
			break
		}
	}
	for token, at := range l.refusedTokens {
		if !l.rejected[at.Unix()] && len(l.tokenJobs[token]) == 0 {
			l.violate("run-now-refusal-dropped", "the API server refused run-now %q's Job; no status recorded the refusal and no Job ran", token)
		}
	}
}

func orScheduled(req string) string {
	if req == "" {
		return "scheduled"
	}
	return req
}

// checkSlot checks the outcomes of one due slot.
func (l *ledger) checkSlot(w *modelWorld, s time.Time) {
	k := s.Unix()
	var outcomes []string
	if l.schedJob[k] {
		outcomes = append(outcomes, "Job")
	}
	for reason := range l.skips[k] {
		outcomes = append(outcomes, "Skipped/"+reason)
	}
	if reason, ok := l.passed[k]; ok {
		outcomes = append(outcomes, "passed over/"+reason)
	}
	sort.Strings(outcomes)
	if len(outcomes) == 0 && slices.ContainsFunc(l.tooMany, func(t time.Time) bool { return t.After(s) }) {
		outcomes = append(outcomes, "TooManyMissedTimes")
	}
	switch {
	case len(outcomes) > 1:
		l.violate("slot-with-two-outcomes", "slot %s has outcomes %v (Jobs %v)", fmtT(w, s), outcomes, l.jobsOf[k])
	case len(outcomes) == 0 && !l.rejected[k]:
		if len(l.refusedSlots[k]) > 0 {
			return // reported as a dropped refusal
		}
		if slotplan.InRanges(l.notRun, s) != nil {
			return // recorded without a Job in the status's ledger (past its deadline: no Event)
		}
		l.violate("slot-without-outcome", "slot %s was due and has no Job, no skip, no refusal and no passed-over Event (backfill Jobs %v)", fmtT(w, s), l.jobsOf[k])
	}
}

// fmtT shows a time as the walk's offset and the instant.
func fmtT(w *modelWorld, t time.Time) string {
	return fmt.Sprintf("%s (+%s)", t.UTC().Format(time.RFC3339), t.Sub(modelStart).Round(time.Second))
}
