package slotplan

// The slot ledger: where each slot of the schedule stands (SlotState), computed by one function
// (slotLedger) from the status read and the Jobs that exist (docs/scheduling.md, "The slot
// ledger"). The records are bounded, and each bound gives way towards "ran": a slot whose record
// was dropped is never run twice.

import (
	"encoding/json"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/jobname"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

// SlotState is where one slot stands in the ledger.
type SlotState string

// The ledger's states, in the order slotLedger tests them.
const (
	SlotCreated        SlotState = "Created"
	SlotBackfilled     SlotState = "Backfilled"
	SlotNotRun         SlotState = "NotRun"
	SlotBeforeSchedule SlotState = "BeforeSchedule"
	SlotUnknown        SlotState = "Unknown"
	SlotDue            SlotState = "Due"
)

// SlotStates lists every state (docs/scheduling.md draws each).
var SlotStates = []SlotState{SlotCreated, SlotBackfilled, SlotNotRun, SlotBeforeSchedule, SlotUnknown, SlotDue}

// Bounds of the ledger's records.
const (
	maxNotRun     = 20
	maxBackfilled = 10
	// maxActiveRefs is the most Jobs status.active lists (status.activeCount counts them all):
	// a tenant decides how many Jobs stay active.
	maxActiveRefs = 5
	// maxStuckNamed is the most Jobs the JobsStuck condition names.
	maxStuckNamed = 5
)

// LedgerEntry is one slot's place in the ledger.
type LedgerEntry struct {
	State SlotState
	// Reason is why a NotRun slot got no Job.
	Reason string
	// Job is the slot's Job when it exists.
	Job *batchv1.Job
}

// Book is where a kind records its slots; Ledger reads every kind's in one order. A
// ScheduledJob's (sjBook) holds many slots, each found by its time; an At's (controller/at) holds
// one, found whatever time the At is edited to: once its Job existed, an At never runs again.
type Book interface {
	// Job is the slot's Job when it exists, under any name it can have.
	Job(slot time.Time) *batchv1.Job
	// Record is where the status puts a slot no Job of which exists: the state its records give
	// (Created, Backfilled, NotRun with why), else what their absence means (Due, or older than
	// what the records cover: BeforeSchedule, Unknown, Created).
	Record(slot time.Time) LedgerEntry
}

// Ledger is where slot stands in b: a Job of the slot wins over any record.
func Ledger(b Book, slot time.Time) LedgerEntry {
	if j := b.Job(slot); j != nil {
		return LedgerEntry{State: SlotCreated, Job: j}
	}
	return b.Record(slot)
}

// slotLedger is where slot stands for sj, from status st (the status read, or the one this pass
// plans) and the Jobs that exist.
func slotLedger(sj *v1alpha1.ScheduledJob, st *v1alpha1.ScheduledJobStatus, children []*batchv1.Job, slot time.Time) LedgerEntry {
	return Ledger(sjBook{sj, st, children}, slot)
}

// sjBook is a ScheduledJob's book: a status and the Jobs that exist.
type sjBook struct {
	sj       *v1alpha1.ScheduledJob
	st       *v1alpha1.ScheduledJobStatus
	children []*batchv1.Job
}

// names are every name a slot's Job can have: the scheduled one, the one used up to 0.1.0 and
// the backfill's.
func (b sjBook) names(slot time.Time) []string {
	return []string{jobname.Slot(b.sj, slot), jobname.LegacySlot(b.sj.Name, slot), jobname.Backfill(b.sj, slot)}
}

func (b sjBook) Job(slot time.Time) *batchv1.Job {
	for _, name := range b.names(slot) {
		if j := jobNamed(b.children, name); j != nil {
			return j
		}
	}
	return nil
}

func (b sjBook) Record(slot time.Time) LedgerEntry {
	st := b.st
	for _, r := range st.Runs {
		if r.ScheduledTime.Time.Equal(slot) && r.JobName != "" && slices.Contains(b.names(slot), r.JobName) {
			return LedgerEntry{State: SlotCreated}
		}
	}
	if InRanges(st.Backfilled, slot) != nil {
		return LedgerEntry{State: SlotBackfilled}
	}
	if r := InRanges(st.NotRun, slot); r != nil {
		return LedgerEntry{State: SlotNotRun, Reason: r.Reason}
	}
	for _, r := range st.Runs {
		if r.ScheduledTime.Time.Equal(slot) && r.JobName == "" {
			return LedgerEntry{State: SlotNotRun, Reason: r.Reason}
		}
	}
	switch {
	case slot.Before(b.sj.CreationTimestamp.Time):
		return LedgerEntry{State: SlotBeforeSchedule}
	case st.NotRunKnownAfter != nil && !slot.After(st.NotRunKnownAfter.Time):
		return LedgerEntry{State: SlotUnknown}
	case st.LastScheduleTime != nil && !slot.After(st.LastScheduleTime.Time):
		return LedgerEntry{State: SlotCreated}
	}
	return LedgerEntry{State: SlotDue}
}

// InRanges returns the range of rs that holds t, or nil.
func InRanges(rs []v1alpha1.SlotRange, t time.Time) *v1alpha1.SlotRange {
	for i := range rs {
		if !t.Before(rs[i].First.Time) && !t.After(rs[i].Last.Time) {
			return &rs[i]
		}
	}
	return nil
}

// recordNotRun adds the slots from first to last (inclusive) that got no Job, for reason, to
// status.notRun: merged into a range of the same reason it overlaps or continues (no slot of
// sched between them); past maxNotRun ranges the oldest is dropped and notRunKnownAfter moves to
// its end.
func recordNotRun(st *v1alpha1.ScheduledJobStatus, sched schedule.Union, first, last time.Time, reason string) {
	next := sched.Next
	if last.Before(first) {
		return
	}
	for i := range st.NotRun {
		r := &st.NotRun[i]
		if r.Reason != reason {
			continue
		}
		switch {
		case first.Before(r.First.Time) && !next(last).Before(r.First.Time):
			r.First = metav1.Time{Time: first} // right before it (no slot between): it grows back
		case first.Before(r.First.Time) || first.After(r.Last.Time) && next(r.Last.Time).Before(first):
			continue // apart from it
		}
		// Within the range, or right before or after it: it grows.
		if last.After(r.Last.Time) {
			r.Last = metav1.Time{Time: last}
		}
		return
	}
	st.NotRun = insertRange(st.NotRun, v1alpha1.SlotRange{First: metav1.Time{Time: first}, Last: metav1.Time{Time: last}, Reason: reason})
	boundNotRun(st, maxNotRun)
}

// sealNotRun keeps only the ends of each range of status.notRun when the schedule or its time
// zone changes. A range's inside was judged by the schedule in force when it grew; read by another
// schedule, it would name that schedule's slots, which may have run (and a backfill would run them
// again). Each inner slot falls to the ledger's other records.
func sealNotRun(st *v1alpha1.ScheduledJobStatus) {
	var sealed []v1alpha1.SlotRange
	for _, r := range st.NotRun {
		sealed = append(sealed, v1alpha1.SlotRange{First: r.Last, Last: r.Last, Reason: r.Reason})
		if !r.First.Equal(&r.Last) {
			sealed = append(sealed, v1alpha1.SlotRange{First: r.First, Last: r.First, Reason: r.Reason})
		}
	}
	st.NotRun = sealed
	boundNotRun(st, maxNotRun)
}

// dropNotRun takes slot out of status.notRun: its Job exists (a refused slot tried again), and a
// slot the ledger lists would be run again by a backfill.
func dropNotRun(st *v1alpha1.ScheduledJobStatus, slot time.Time) {
	i := slices.IndexFunc(st.NotRun, func(r v1alpha1.SlotRange) bool { return InRanges([]v1alpha1.SlotRange{r}, slot) != nil })
	if i < 0 {
		return
	}
	r := st.NotRun[i]
	var parts []v1alpha1.SlotRange // newest first
	if slot.Before(r.Last.Time) {
		parts = append(parts, v1alpha1.SlotRange{First: metav1.NewTime(slot.Add(time.Second)), Last: r.Last, Reason: r.Reason})
	}
	if r.First.Time.Before(slot) {
		parts = append(parts, v1alpha1.SlotRange{First: r.First, Last: metav1.NewTime(slot.Add(-time.Second)), Reason: r.Reason})
	}
	st.NotRun = slices.Replace(st.NotRun, i, i+1, parts...)
	boundNotRun(st, maxNotRun)
}

// maxStatusBytes is what a ScheduledJob's status may weigh, serialized: under the 8 KiB one cached
// object may cost (cachebounds.MaxObjectBytes), with room for what the cache keeps beside it.
const maxStatusBytes = 7 << 10

// fitStatus drops the oldest status.notRun ranges, as the count bound does (notRunKnownAfter moves
// past them), while the status weighs more than maxStatusBytes: the run history's messages, the
// conditions, the active list and the ranges each have a bound, but not all at once.
func fitStatus(st *v1alpha1.ScheduledJobStatus) {
	for len(st.NotRun) > 0 {
		if b, err := json.Marshal(st); err != nil || len(b) <= maxStatusBytes {
			return
		}
		boundNotRun(st, len(st.NotRun)-1)
	}
}

// boundNotRun drops the oldest ranges past limit, moving notRunKnownAfter to their end.
func boundNotRun(st *v1alpha1.ScheduledJobStatus, limit int) {
	for len(st.NotRun) > limit {
		dropped := st.NotRun[len(st.NotRun)-1]
		st.NotRun = st.NotRun[:len(st.NotRun)-1]
		if st.NotRunKnownAfter == nil || dropped.Last.After(st.NotRunKnownAfter.Time) {
			st.NotRunKnownAfter = &metav1.Time{Time: dropped.Last.Time}
		}
	}
}

// recordBackfilled adds slot to status.backfilled: into a range it continues (no slot of sched
// between them), or as a range of its own; past maxBackfilled ranges the two closest are merged,
// so the slots between them count as backfilled too (never run by a later backfill: the bound
// gives way towards "ran").
func recordBackfilled(st *v1alpha1.ScheduledJobStatus, sched schedule.Union, slot time.Time) {
	if InRanges(st.Backfilled, slot) != nil {
		return
	}
	for i := range st.Backfilled {
		r := &st.Backfilled[i]
		if sched.Next(r.Last.Time).Equal(slot) {
			r.Last = metav1.Time{Time: slot}
			return
		}
		if sched.Next(slot).Equal(r.First.Time) {
			r.First = metav1.Time{Time: slot}
			return
		}
	}
	st.Backfilled = insertRange(st.Backfilled, v1alpha1.SlotRange{First: metav1.Time{Time: slot}, Last: metav1.Time{Time: slot}})
	for len(st.Backfilled) > maxBackfilled {
		// Newest first: st.Backfilled[i+1] is before st.Backfilled[i].
		gap := func(i int) time.Duration { return st.Backfilled[i].First.Sub(st.Backfilled[i+1].Last.Time) }
		closest := 0
		for i := 1; i+1 < len(st.Backfilled); i++ {
			if gap(i) < gap(closest) {
				closest = i
			}
		}
		st.Backfilled[closest+1].Last = st.Backfilled[closest].Last
		st.Backfilled = slices.Delete(st.Backfilled, closest, closest+1)
	}
}

// insertRange puts r into rs, newest (by first) first.
func insertRange(rs []v1alpha1.SlotRange, r v1alpha1.SlotRange) []v1alpha1.SlotRange {
	i := 0
	for i < len(rs) && rs[i].First.After(r.First.Time) {
		i++
	}
	return slices.Insert(rs, i, r)
}

// sanitize is the first step of every pass: it makes any status the CRD's schema admits (a user
// with the status subresource, a backup restore or an older manager may write it) one that the
// steps can read. It reports what it changed, for the Event of the pass that writes the repair.
func sanitize(st *v1alpha1.ScheduledJobStatus) []string {
	var fixed []string
	if bf := st.Backfill; bf != nil && bf.Phase == v1alpha1.BackfillRunning && (bf.From == nil || bf.To == nil || bf.StartTime == nil || !bf.From.Before(bf.To)) {
		bf.Phase, bf.NextSlot, bf.Message = v1alpha1.BackfillCancelled, nil, "status.backfill was incomplete (from, to or startTime missing or out of order): the request is cancelled; set the annotation to a new value to ask again"
		fixed = append(fixed, "status.backfill")
	}
	active := slices.DeleteFunc(slices.Clone(st.Active), func(a corev1.ObjectReference) bool { return a.Name == "" || a.UID == "" })
	if len(active) != len(st.Active) {
		st.Active = active
		fixed = append(fixed, "status.active")
	}
	for _, rs := range []*[]v1alpha1.SlotRange{&st.NotRun, &st.Backfilled} {
		kept := slices.DeleteFunc(slices.Clone(*rs), func(r v1alpha1.SlotRange) bool { return r.Last.Before(&r.First) })
		if len(kept) != len(*rs) {
			*rs = kept
			fixed = append(fixed, "a slot range")
		}
		slices.SortStableFunc(*rs, func(a, b v1alpha1.SlotRange) int { return b.First.Compare(a.First.Time) })
	}
	if st.Stop != nil && st.Stop.Reason != ReasonStoppedAfterFailures && st.Stop.Reason != ReasonStoppedAfterSuccesses {
		st.Stop = nil
		fixed = append(fixed, "status.stop")
	}
	return fixed
}
