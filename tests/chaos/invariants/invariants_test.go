package invariants

import (
	"reflect"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)

func sjJob(name, uid string, slot time.Time) Job {
	return Job{Namespace: "ns", Name: name, UID: uid, OwnerKind: "ScheduledJob", OwnerName: "sj", Slot: slot}
}

func objects(v []Violation) []string {
	var out []string
	for _, x := range v {
		out = append(out, x.Invariant+" "+x.Object)
	}
	return out
}

func TestDoubledSlots(t *testing.T) {
	cases := []struct {
		name string
		jobs []Job
		want []string
	}{
		{"one Job per slot is fine", []Job{sjJob("sj-1", "a", t0), sjJob("sj-2", "b", t0.Add(time.Minute))}, nil},
		{"the same UID seen twice (add, then update) is one run", []Job{sjJob("sj-1", "a", t0), sjJob("sj-1", "a", t0)}, nil},
		{"a slot recreated after its Job was pruned ran twice", []Job{sjJob("sj-1", "a", t0), sjJob("sj-1", "b", t0)},
			[]string{"slot-run-twice ns/sj@2026-11-23T22:00:00Z"}},
		{"the same instant in another zone is the same slot", []Job{sjJob("sj-1", "a", t0), sjJob("sj-1", "b", t0.In(time.FixedZone("KST", 9*3600)))},
			[]string{"slot-run-twice ns/sj@2026-11-23T22:00:00Z"}},
		{"run-now Jobs and At Jobs are not slots", []Job{sjJob("sj-1", "a", t0), {Namespace: "ns", UID: "b", OwnerKind: "ScheduledJob", OwnerName: "sj", Slot: t0, RunNow: true},
			{Namespace: "ns", UID: "c", OwnerKind: "At", OwnerName: "sj", Slot: t0}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := objects(DoubledSlots(c.jobs)); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestLostSlots(t *testing.T) {
	slots := []time.Time{t0, t0.Add(time.Minute)}
	cases := []struct {
		name      string
		jobs      []Job
		explained Explained
		want      []string
	}{
		{"every slot has a Job", []Job{sjJob("sj-1", "a", t0), sjJob("sj-2", "b", t0.Add(time.Minute))}, nil, nil},
		{"a slot without a Job is lost", []Job{sjJob("sj-1", "a", t0)}, nil, []string{"slot-lost ns/sj@2026-11-23T22:01:00Z"}},
		{"a slot the controller explained is not lost", []Job{sjJob("sj-1", "a", t0)},
			func(_, _ string, s time.Time) bool { return s.Equal(t0.Add(time.Minute)) }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := objects(LostSlots([]string{"ns/sj"}, slots, c.jobs, c.explained)); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestAtRuns(t *testing.T) {
	at := func(owner, uid string) Job { return Job{Namespace: "ns", UID: uid, OwnerKind: "At", OwnerName: owner} }
	got := objects(AtRuns([]string{"ns/once", "ns/never", "ns/twice"}, []Job{at("once", "a"), at("once", "a"), at("twice", "b"), at("twice", "c")}))
	want := []string{"at-not-run-once ns/never", "at-not-run-once ns/twice"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestUntruthfulStatus(t *testing.T) {
	jobs := []Job{sjJob("sj-1", "a", t0), sjJob("sj-2", "b", t0.Add(time.Minute)), sjJob("sj-3", "c", t0.Add(2*time.Minute))}
	cases := []struct {
		name string
		last time.Time
		want []string
	}{
		{"lastScheduleTime at the latest slot up to the check is truthful", t0.Add(time.Minute), nil},
		{"lastScheduleTime behind the latest slot is not", t0, []string{"status-untruthful ns/sj"}},
		{"an unset lastScheduleTime with Jobs is not", time.Time{}, []string{"status-untruthful ns/sj"}},
		{"a later slot with a Job, recorded before the check ran, is truthful", t0.Add(2 * time.Minute), nil},
		{"a slot without any Job is not", t0.Add(3 * time.Minute), []string{"status-untruthful ns/sj"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := objects(UntruthfulStatus(map[string]time.Time{"ns/sj": c.last}, jobs, t0.Add(time.Minute+30*time.Second)))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestDiverged(t *testing.T) {
	got := objects(Diverged("new", map[string]string{"a": "new", "b": "old"}, []string{"a", "b", "c"}))
	want := []string{"copy-not-converged b", "copy-not-converged c"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestTouched(t *testing.T) {
	before := map[string]string{"ns1/s": "10", "ns2/s": "20", "ns3/s": "30"}
	changes := []ForeignChange{
		{"ns1/s", "MODIFIED", "10"}, // a resync of the same version: untouched
		{"ns2/s", "MODIFIED", "25"},
		{"ns3/s", "DELETED", "30"},
		{"ns4/s", "MODIFIED", "99"}, // not a decoy
	}
	got := objects(Touched(before, changes))
	want := []string{"foreign-secret-touched ns2/s", "foreign-secret-touched ns3/s"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestMinutes(t *testing.T) {
	got := Minutes(t0.Add(-30*time.Second), t0.Add(time.Minute))
	want := []time.Time{t0, t0.Add(time.Minute)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestSlotRecords(t *testing.T) {
	m := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	slots := Minutes(m(0), m(3))
	jobs := []Job{sjJob("sj-0", "u0", m(0)), sjJob("sj-2", "u2", m(2))}
	ran := func(i int, name string) Run { return Run{Slot: m(i), JobName: name, Result: "Succeeded"} }
	skipped := func(i int, reason string) Run { return Run{Slot: m(i), Result: "Skipped", Reason: reason} }
	refused := func(i int) Run { return Run{Slot: m(i), Result: "Failed", Reason: "JobRejected"} }
	cases := []struct {
		name       string
		runs       []Run // newest first
		passedOver Explained
		want       []string
	}{
		{name: "every slot once, with its reason: none",
			runs: []Run{refused(3), ran(2, "sj-2"), skipped(1, "JobAlreadyActive"), ran(0, "sj-0")}},
		{name: "a slot whose Job ran recorded as missed too (the record after the deadline)",
			runs: []Run{refused(3), ran(2, "sj-2"), skipped(2, "MissedDeadline"), skipped(1, "JobAlreadyActive"), ran(0, "sj-0")},
			want: []string{SlotRecordedTwice + " ns/sj@2026-11-23T22:02:00Z"}},
		{name: "a slot whose Job ran recorded only as skipped",
			runs: []Run{refused(3), skipped(2, "MissedDeadline"), skipped(1, "JobAlreadyActive"), ran(0, "sj-0")},
			want: []string{SlotWrongReason + " ns/sj@2026-11-23T22:02:00Z"}},
		{name: "a slot without a Job recorded as a run",
			runs: []Run{refused(3), ran(2, "sj-2"), ran(1, "sj-1"), ran(0, "sj-0")},
			want: []string{SlotWrongReason + " ns/sj@2026-11-23T22:01:00Z"}},
		{name: "a slot with neither a Job nor a record (the Forbid record never written)",
			runs: []Run{refused(3), ran(2, "sj-2"), ran(0, "sj-0")},
			want: []string{SlotUnrecorded + " ns/sj@2026-11-23T22:01:00Z"}},
		{name: "the same, named passed over by an Event: fine",
			runs:       []Run{refused(3), ran(2, "sj-2"), ran(0, "sj-0")},
			passedOver: func(_, _ string, s time.Time) bool { return s.Equal(m(1)) }},
		{name: "a slot whose Job ran missing from the history",
			runs: []Run{refused(3), skipped(1, "JobAlreadyActive"), ran(0, "sj-0")},
			want: []string{SlotUnrecorded + " ns/sj@2026-11-23T22:02:00Z"}},
		{name: "slots older than the history are not checked",
			runs: []Run{refused(3), ran(2, "sj-2")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := objects(SlotRecords(map[string][]Run{"ns/sj": tc.runs}, slots, jobs, tc.passedOver))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNotRunLedger: status.notRun (the slot ledger, ranges of slots that got no Job) explains a
// slot passed over (a leaderless stretch longer than the deadline leaves no run per slot, only a
// range), and a range that lists a slot whose Job ran is a lie a backfill would act on.
func TestNotRunLedger(t *testing.T) {
	m := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	ledger := []SlotRange{{First: m(1), Last: m(3), Reason: "MissedSlots"}, {First: m(5), Last: m(5), Reason: "MissedDeadline"},
		{First: m(7), Last: m(8)}} // reason empty: a backfill ran them since
	for _, tc := range []struct {
		slot time.Time
		want bool
	}{{m(0), false}, {m(1), true}, {m(2), true}, {m(3), true}, {m(4), false}, {m(5), true}, {m(6), false}, {m(7), false}} {
		if got := NotRunLists(ledger, tc.slot); got != tc.want {
			t.Errorf("NotRunLists(%s) = %v, want %v", tc.slot.Format("15:04"), got, tc.want)
		}
	}
	// The check that uses it: a slot passed over, listed in the ledger only, is accounted for.
	runs := map[string][]Run{"ns/sj": {{Slot: m(4), JobName: "sj-4", Result: "Succeeded"}, {Slot: m(0), JobName: "sj-0", Result: "Succeeded"}}}
	jobs := []Job{sjJob("sj-0", "u0", m(0)), sjJob("sj-4", "u4", m(4))}
	listed := func(_, _ string, s time.Time) bool { return NotRunLists(ledger, s) }
	if got := objects(SlotRecords(runs, Minutes(m(0), m(4)), jobs, listed)); got != nil {
		t.Errorf("SlotRecords with the ledger: got %v, want none", got)
	}
	if got, want := objects(SlotRecords(runs, Minutes(m(0), m(4)), jobs, nil)), []string{
		SlotUnrecorded + " ns/sj@2026-11-23T22:01:00Z", SlotUnrecorded + " ns/sj@2026-11-23T22:02:00Z", SlotUnrecorded + " ns/sj@2026-11-23T22:03:00Z"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SlotRecords without the ledger: got %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name string
		jobs []Job
		want []string
	}{
		{"Jobs only outside the listed ranges: none", jobs, nil},
		{"a Job for a slot the ledger lists", append(jobs, sjJob("sj-2", "u2", m(2))), []string{NotRunButRan + " ns/sj@2026-11-23T22:02:00Z"}},
		{"a Job for a slot a backfill ran (empty reason): none", append(jobs, sjJob("sj-7", "u7", m(7))), nil},
		{"another ScheduledJob's Job at a listed minute: none", []Job{{Namespace: "ns", Name: "other-2", UID: "o2", OwnerKind: "ScheduledJob", OwnerName: "other", Slot: m(2)}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := objects(NotRunRan(map[string][]SlotRange{"ns/sj": ledger}, tc.jobs)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBehind: a ScheduledJob is behind slot until its status decided a slot at or after it (a run,
// a skip, or a ledger range reaching it); only then can a slot without a Job or record be lost.
func TestBehind(t *testing.T) {
	m := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	keys := []string{"ns/ran", "ns/skipped", "ns/missed", "ns/backfilled", "ns/late", "ns/never"}
	last := map[string]time.Time{"ns/ran": m(3), "ns/skipped": m(1), "ns/missed": m(0), "ns/backfilled": m(0), "ns/late": m(2)}
	skipped := map[string]time.Time{"ns/skipped": m(3), "ns/late": m(1)}
	notRun := map[string][]SlotRange{
		// a MissedDeadline range ends a second before the next slot; the passed-over one reaches it
		"ns/missed":     {{First: m(3), Last: m(3), Reason: "MissedSlots"}, {First: m(1), Last: m(3).Add(-time.Second), Reason: "MissedDeadline"}},
		"ns/backfilled": {{First: m(1), Last: m(3)}}, // no reason: ran since, decides nothing
		"ns/late":       {{First: m(0), Last: m(2).Add(-time.Second), Reason: "MissedDeadline"}},
	}
	got := Behind(keys, last, skipped, notRun, m(3))
	want := []string{"ns/backfilled", "ns/late", "ns/never"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Behind at %s = %v, want %v", m(3).Format("15:04"), got, want)
	}
	if got := Behind(keys[:3], last, skipped, notRun, m(3)); got != nil {
		t.Errorf("Behind of the caught-up ones = %v, want none", got)
	}
}
