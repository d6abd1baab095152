// Package invariants holds the fault harness's checks as pure functions over what its watches
// recorded: Jobs seen (with their owner, slot and UID), skip explanations, Secret copies and
// decoys. It imports neither client-go nor controller-runtime, so every check has table tests.
package invariants

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Job is one Job UID the harness's watch saw, whatever happened to it later (pruned Jobs count).
type Job struct {
	Namespace, Name, UID string
	// OwnerKind and OwnerName are the controlling owner's (ScheduledJob or At).
	OwnerKind, OwnerName string
	// Slot is the scheduled time from the batch.kubernetes.io/cronjob-scheduled-timestamp
	// annotation; zero when the Job has none.
	Slot time.Time
	// RunNow marks a run-now Job (not a slot).
	RunNow bool
	// Seen is when the watch first saw this UID.
	Seen time.Time
}

// Violation is one broken invariant, named so a reader can find the objects.
type Violation struct {
	Invariant string `json:"invariant"`
	Object    string `json:"object"`
	Detail    string `json:"detail"`
}

func (v Violation) String() string { return v.Invariant + " " + v.Object + ": " + v.Detail }

// Invariant names.
const (
	SlotRunTwice     = "slot-run-twice"
	SlotLost         = "slot-lost"
	AtRunCount       = "at-not-run-once"
	CopyDiverged     = "copy-not-converged"
	ForeignTouched   = "foreign-secret-touched"
	StatusUntruthful = "status-untruthful"
	CrashLoop        = "crash-loop"
	OldLeaderActed   = "old-leader-acted"
	// SlotRecordedTwice: a slot has more than one record in status.runs.
	SlotRecordedTwice = "slot-recorded-twice"
	// SlotWrongReason: a slot's record does not say what happened to it (a slot with a Job
	// recorded as skipped or refused, a slot without one recorded as a run).
	SlotWrongReason = "slot-wrong-reason"
	// SlotUnrecorded: a slot within the run history's window has no record and no Job.
	SlotUnrecorded = "slot-unrecorded"
	// NotRunButRan: status.notRun lists a slot that got a Job.
	NotRunButRan = "notrun-lists-a-slot-that-ran"
)

// SlotRange is one entry of a ScheduledJob's status.notRun as the harness read it: the slots from
// First to Last (both included) got no Job, for Reason (empty for a range a backfill ran since).
type SlotRange struct {
	First, Last time.Time
	Reason      string
}

// NotRunLists reports whether the ledger ranges list slot as not run (with a reason). The
// scenarios' schedules fire every minute, so every minute of a range is a slot of it.
func NotRunLists(ranges []SlotRange, slot time.Time) bool {
	for _, r := range ranges {
		if r.Reason != "" && !slot.Before(r.First) && !slot.After(r.Last) {
			return true
		}
	}
	return false
}

// Behind returns the ScheduledJobs (keys, sorted) whose status has not yet decided a slot at or
// after until: neither lastScheduleTime, lastSkippedTime nor the last slot of a status.notRun
// range reaches it. A pass decides the most recent due slot and records the ones before it that
// got no Job, so a slot with no Job and no record is late, not lost, while its ScheduledJob is
// behind: a new leader working through hundreds of ScheduledJobs after a failover on a starved
// node takes minutes. The checks look once every key has caught up (or a bound has passed).
func Behind(keys []string, last, skipped map[string]time.Time, notRun map[string][]SlotRange, until time.Time) []string {
	var out []string
	for _, k := range keys {
		decided := last[k]
		if skipped[k].After(decided) {
			decided = skipped[k]
		}
		for _, r := range notRun[k] {
			if r.Reason != "" && r.Last.After(decided) {
				decided = r.Last
			}
		}
		if decided.Before(until) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// NotRunRan reports every slot that status.notRun (notRun, by "namespace/name" key) lists as not
// run although the watch saw a Job for it: the ledger a backfill asks would run it twice.
func NotRunRan(notRun map[string][]SlotRange, jobs []Job) []Violation {
	var out []Violation
	for k, uids := range SlotUIDs(jobs) {
		if NotRunLists(notRun[k.Namespace+"/"+k.ScheduledJob], k.Slot) {
			out = append(out, Violation{NotRunButRan, k.String(), fmt.Sprintf("status.notRun lists it, and %d Job(s) ran it: %s", len(uids), strings.Join(uids, ", "))})
		}
	}
	return sorted(out)
}

// Run is one entry of a ScheduledJob's status.runs as the harness read it at the end.
type Run struct {
	Slot                    time.Time
	JobName, Result, Reason string
}

// SlotRecords checks that every slot is accounted for exactly once with its true reason, from
// each ScheduledJob's status.runs (runs, by "namespace/name" key, newest first as the controller
// writes them) against the Jobs the watch saw, over slots (the minutes the scenario covered):
//
//   - no slot has two records (a Job's run next to a skip of the same slot);
//   - a slot that got a Job is recorded as that Job's run (Running, Succeeded, Failed or
//     Deleted, with its name), never Skipped or refused;
//   - a slot recorded Skipped, or Failed with reason JobRejected, got no Job;
//   - a slot whose Job ran has a record (a Job is pruned only once its run is recorded);
//   - a slot with neither a Job nor a record must be one passedOver explains (status.notRun lists
//     it, or a MissedSlots, TooManyMissedTimes or Suspended Event names it: slots passed over have
//     no run each, only a range in the ledger).
//
// Only slots from the oldest record on are checked: the history keeps spec.runHistoryLimit runs.
func SlotRecords(runs map[string][]Run, slots []time.Time, jobs []Job, passedOver Explained) []Violation {
	got := SlotUIDs(jobs)
	names := map[SlotKey]map[string]bool{}
	for _, j := range jobs {
		if j.OwnerKind != "ScheduledJob" || j.RunNow || j.Slot.IsZero() {
			continue
		}
		k := SlotKey{j.Namespace, j.OwnerName, j.Slot.UTC()}
		if names[k] == nil {
			names[k] = map[string]bool{}
		}
		names[k][j.Name] = true
	}
	var out []Violation
	for key, rs := range runs {
		ns, name, _ := strings.Cut(key, "/")
		if len(rs) == 0 {
			continue
		}
		oldest := rs[len(rs)-1].Slot
		bySlot := map[time.Time][]Run{}
		for _, r := range rs {
			bySlot[r.Slot.UTC()] = append(bySlot[r.Slot.UTC()], r)
		}
		for _, s := range slots {
			if s.Before(oldest) {
				continue
			}
			k := SlotKey{ns, name, s.UTC()}
			recs, ran := bySlot[s.UTC()], len(got[k]) > 0
			switch {
			case len(recs) > 1:
				out = append(out, Violation{SlotRecordedTwice, k.String(), fmt.Sprintf("%d records: %v", len(recs), recs)})
			case len(recs) == 1 && ran && (recs[0].JobName == "" || !names[k][recs[0].JobName]):
				out = append(out, Violation{SlotWrongReason, k.String(), fmt.Sprintf("a Job ran, the record says %s/%s", recs[0].Result, recs[0].Reason)})
			case len(recs) == 1 && !ran && recs[0].JobName != "":
				out = append(out, Violation{SlotWrongReason, k.String(), fmt.Sprintf("no Job was seen, the record names %s (%s)", recs[0].JobName, recs[0].Result)})
			case len(recs) == 1 && !ran && recs[0].Result != "Skipped" && (recs[0].Result != "Failed" || recs[0].Reason != "JobRejected"):
				out = append(out, Violation{SlotWrongReason, k.String(), fmt.Sprintf("no Job, the record says %s/%s", recs[0].Result, recs[0].Reason)})
			case len(recs) == 0 && ran:
				out = append(out, Violation{SlotUnrecorded, k.String(), "a Job ran and status.runs does not list it"})
			case len(recs) == 0 && !ran && (passedOver == nil || !passedOver(ns, name, s)):
				out = append(out, Violation{SlotUnrecorded, k.String(), "no Job and no record, neither status.notRun nor an Event names it passed over"})
			}
		}
	}
	return sorted(out)
}

// SlotKey names one slot of one ScheduledJob.
type SlotKey struct {
	Namespace, ScheduledJob string
	Slot                    time.Time
}

func (k SlotKey) String() string {
	return fmt.Sprintf("%s/%s@%s", k.Namespace, k.ScheduledJob, k.Slot.UTC().Format(time.RFC3339))
}

// SlotUIDs groups the ScheduledJob Jobs by slot: the distinct UIDs each slot got, in the order seen.
func SlotUIDs(jobs []Job) map[SlotKey][]string {
	out := map[SlotKey][]string{}
	for _, j := range jobs {
		if j.OwnerKind != "ScheduledJob" || j.RunNow || j.Slot.IsZero() {
			continue
		}
		k := SlotKey{j.Namespace, j.OwnerName, j.Slot.UTC()}
		if !contains(out[k], j.UID) {
			out[k] = append(out[k], j.UID)
		}
	}
	return out
}

// DoubledSlots reports every slot that more than one Job UID ran (at most once is broken), with
// the Job names and UIDs.
func DoubledSlots(jobs []Job) []Violation {
	names := map[string]string{}
	for _, j := range jobs {
		names[j.UID] = j.Name
	}
	var out []Violation
	for k, uids := range SlotUIDs(jobs) {
		if len(uids) < 2 {
			continue
		}
		var parts []string
		for _, u := range uids {
			parts = append(parts, names[u]+" uid "+u)
		}
		out = append(out, Violation{SlotRunTwice, k.String(), fmt.Sprintf("%d Jobs: %s", len(uids), strings.Join(parts, ", "))})
	}
	return sorted(out)
}

// Explained reports whether the controller explained not running a slot (an Event naming the
// slot, status.lastSkippedTime at the slot, or status.notRun listing it).
type Explained func(namespace, scheduledJob string, slot time.Time) bool

// LostSlots reports every (ScheduledJob, slot) among slots that got no Job and no explanation.
// sjs are "namespace/name" keys; slots are the minutes to check (every-minute schedules).
func LostSlots(sjs []string, slots []time.Time, jobs []Job, explained Explained) []Violation {
	got := SlotUIDs(jobs)
	var out []Violation
	for _, key := range sjs {
		ns, name, _ := strings.Cut(key, "/")
		for _, s := range slots {
			k := SlotKey{ns, name, s.UTC()}
			if len(got[k]) > 0 || (explained != nil && explained(ns, name, s)) {
				continue
			}
			out = append(out, Violation{SlotLost, k.String(), "no Job for the slot and no Event, lastSkippedTime or status.notRun explaining why"})
		}
	}
	return sorted(out)
}

// AtRuns reports every At (a "namespace/name" key) that did not get exactly one Job UID.
func AtRuns(ats []string, jobs []Job) []Violation {
	uids := map[string][]string{}
	for _, j := range jobs {
		if j.OwnerKind != "At" {
			continue
		}
		k := j.Namespace + "/" + j.OwnerName
		if !contains(uids[k], j.UID) {
			uids[k] = append(uids[k], j.UID)
		}
	}
	var out []Violation
	for _, a := range ats {
		if n := len(uids[a]); n != 1 {
			out = append(out, Violation{AtRunCount, a, fmt.Sprintf("%d Jobs (uids %v)", n, uids[a])})
		}
	}
	return sorted(out)
}

// LastSlot is the latest slot with a Job for each ScheduledJob key, among slots not after until.
func LastSlot(jobs []Job, until time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for k := range SlotUIDs(jobs) {
		if k.Slot.After(until) {
			continue
		}
		key := k.Namespace + "/" + k.ScheduledJob
		if k.Slot.After(out[key]) {
			out[key] = k.Slot
		}
	}
	return out
}

// UntruthfulStatus checks each ScheduledJob's status.lastScheduleTime (zero when unset): it must
// name a slot the watch saw a Job for, and not one older than the latest such slot up to until
// (a slot after until may be recorded already: the check runs while slots go on).
func UntruthfulStatus(lastScheduleTime map[string]time.Time, jobs []Job, until time.Time) []Violation {
	want := LastSlot(jobs, until)
	ran := map[SlotKey]bool{}
	for k := range SlotUIDs(jobs) {
		ran[k] = true
	}
	var out []Violation
	for key, got := range lastScheduleTime {
		w, ok := want[key]
		if !ok {
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		if got.Before(w) || !ran[SlotKey{ns, name, got.UTC()}] {
			out = append(out, Violation{StatusUntruthful, key, fmt.Sprintf("lastScheduleTime %s, latest slot with a Job up to %s: %s",
				fmtTime(got), until.UTC().Format("15:04:05"), fmtTime(w))})
		}
	}
	return sorted(out)
}

// Diverged reports every copy (namespace → data digest) whose digest is not the source's, and
// every expected namespace with no copy at all.
func Diverged(source string, copies map[string]string, namespaces []string) []Violation {
	var out []Violation
	for _, ns := range namespaces {
		d, ok := copies[ns]
		switch {
		case !ok:
			out = append(out, Violation{CopyDiverged, ns, "no copy"})
		case d != source:
			out = append(out, Violation{CopyDiverged, ns, "copy data " + short(d) + ", source " + short(source)})
		}
	}
	return sorted(out)
}

// ForeignChange is a write the watch saw on a Secret the add-on does not own.
type ForeignChange struct {
	Key, Event, ResourceVersion string
}

// Touched reports every foreign Secret whose recorded resourceVersion changed or that was
// modified or deleted.
func Touched(before map[string]string, changes []ForeignChange) []Violation {
	var out []Violation
	for _, c := range changes {
		rv, ok := before[c.Key]
		if !ok {
			continue
		}
		if c.Event == "DELETED" || c.ResourceVersion != rv {
			out = append(out, Violation{ForeignTouched, c.Key, fmt.Sprintf("%s (resourceVersion %s -> %s)", c.Event, rv, c.ResourceVersion)})
		}
	}
	return sorted(out)
}

// Minutes returns the minute boundaries in [from, to].
func Minutes(from, to time.Time) []time.Time {
	var out []time.Time
	m := from.UTC().Truncate(time.Minute)
	if m.Before(from) {
		m = m.Add(time.Minute)
	}
	for ; !m.After(to); m = m.Add(time.Minute) {
		out = append(out, m)
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func sorted(v []Violation) []Violation {
	sort.Slice(v, func(i, j int) bool {
		if v[i].Invariant != v[j].Invariant {
			return v[i].Invariant < v[j].Invariant
		}
		return v[i].Object < v[j].Object
	})
	return v
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "unset"
	}
	return t.UTC().Format(time.RFC3339)
}
