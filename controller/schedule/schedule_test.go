package schedule

import (
	"errors"
	"testing"
	"time"
)

// Fixed times, as upstream's tests: 2016-05-19 was a Thursday.
var topOfTheHour = mustTime("2016-05-19T10:00:00Z")

// String names an action in the failures of the tests (only they print one).
func (a OnceAction) String() string { return [...]string{"Wait", "Run", "TooLate"}[a] }

func mustTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func after(d time.Duration) time.Time { return topOfTheHour.Add(d) }
func ptrTime(t time.Time) *time.Time  { return &t }
func ptrInt(i int64) *int64           { return &i }

func mustParse(t *testing.T, spec, tz string) Schedule {
	t.Helper()
	s, err := Parse(spec, tz, topOfTheHour)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", spec, tz, err)
	}
	return s
}

func TestParse(t *testing.T) {
	cases := []struct {
		name, spec, tz string
		wantErr        error
	}{
		{"five fields parse", "*/5 * * * *", "", nil},
		{"a descriptor parses", "@hourly", "", nil},
		{"@every parses", "@every 90m", "", nil},
		{"a known time zone parses", "0 9 * * 1-5", "Europe/Berlin", nil},
		{"an unknown time zone is reported as such", "0 9 * * *", "Mars/Olympus", ErrUnknownTimeZone},
		{"six fields do not parse", "0 0 9 * * *", "", ErrUnparseable},
		{"garbage does not parse", "every day", "", ErrUnparseable},
		{"a TZ= prefix is refused in favour of timeZone", "TZ=UTC 0 * * * *", "", ErrUnparseable},
		{"the 30th of February never fires", "0 0 30 2 *", "", ErrNeverFires},
		{"the 31st of February never fires (upstream's rogue schedule)", "59 23 31 2 *", "", ErrNeverFires},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.spec, tc.tz, topOfTheHour)
			if tc.wantErr == nil && err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// TestMostRecent ports upstream's TestMostRecentScheduleTime and TestNextScheduleTime cases.
func TestMostRecent(t *testing.T) {
	cases := []struct {
		name         string
		spec         string
		created      time.Time
		last         *time.Time
		deadline     *int64
		withDeadline bool
		now          time.Time
		wantEarliest time.Time
		wantRecent   *time.Time
		wantMissed   Missed
	}{
		{name: "now before the next slot runs nothing", spec: "0 * * * *", created: topOfTheHour,
			now: after(30 * time.Second), wantEarliest: topOfTheHour},
		{name: "now just after the next slot runs it", spec: "0 * * * *", created: topOfTheHour,
			now: after(61 * time.Minute), wantEarliest: topOfTheHour, wantRecent: ptrTime(after(time.Hour))},
		{name: "five missed slots run only the most recent", spec: "0 * * * *", created: after(10 * time.Second),
			now: after(301 * time.Minute), wantEarliest: after(10 * time.Second), wantRecent: ptrTime(after(300 * time.Minute)), wantMissed: FewMissed},
		{name: "a complex schedule finds its most recent slot", spec: "30 6-16/4 * * 1-5", created: topOfTheHour, last: ptrTime(after(30 * time.Minute)),
			now: after(24*time.Hour + 31*time.Minute), wantEarliest: after(30 * time.Minute), wantRecent: ptrTime(after(24*time.Hour + 30*time.Minute)), wantMissed: FewMissed},
		// Upstream's estimate starts after Friday 12:30 and finds nothing: its test (which this
		// one copied) said "no unmet slot" while five had passed, and the catch-up run was lost.
		{name: "another complex schedule finds its most recent slot hours before now", spec: "30 10,11,12 * * 1-5", created: topOfTheHour, last: ptrTime(after(30 * time.Minute)),
			now: after(30*time.Hour + 30*time.Minute), wantEarliest: after(30 * time.Minute), wantRecent: ptrTime(after(26*time.Hour + 30*time.Minute)), wantMissed: FewMissed},
		{name: "an irregular schedule after a weekend outage catches up Friday's last slot", spec: "30 6-16/4 * * 1-5", created: topOfTheHour, last: ptrTime(after(30 * time.Minute)),
			now: after(91 * time.Hour), wantEarliest: after(30 * time.Minute), wantRecent: ptrTime(after(28*time.Hour + 30*time.Minute)), wantMissed: FewMissed},
		{name: "a schedule silent most of the year catches up its last slot months later", spec: "0 9 1 1 *", created: mustTime("2016-01-01T09:00:00Z"), last: ptrTime(mustTime("2016-01-01T09:00:00Z")),
			now: mustTime("2019-06-01T00:00:00Z"), wantEarliest: mustTime("2016-01-01T09:00:00Z"), wantRecent: ptrTime(mustTime("2019-01-01T09:00:00Z")), wantMissed: FewMissed},
		{name: "a dense burst far back is found behind a long silence", spec: "* 9 * * 1", created: topOfTheHour,
			now: after(20 * 24 * time.Hour), wantEarliest: topOfTheHour, wantRecent: ptrTime(mustTime("2016-06-06T09:59:00Z")), wantMissed: ManyMissed},
		{name: "a complex schedule with a longer gap finds its most recent slot", spec: "30 6-16/4 * * 1-5", created: topOfTheHour, last: ptrTime(after(30 * time.Minute)),
			now: after(96*time.Hour + 31*time.Minute), wantEarliest: after(30 * time.Minute), wantRecent: ptrTime(after(96*time.Hour + 30*time.Minute)), wantMissed: FewMissed},
		{name: "a complex schedule that never ran counts from creation", spec: "30 6-16/4 * * 1-5", created: topOfTheHour,
			now: after(24*time.Hour + 31*time.Minute), wantEarliest: topOfTheHour, wantRecent: ptrTime(after(24*time.Hour + 30*time.Minute)), wantMissed: FewMissed},
		{name: "@every a week late is many missed but still runs the most recent slot", spec: "@every 1h", created: after(-59 * time.Minute), last: ptrTime(after(time.Minute)), deadline: ptrInt(10),
			now: after(7 * 24 * time.Hour), wantEarliest: after(time.Minute), wantRecent: ptrTime(after(6*24*time.Hour + 23*time.Hour + time.Minute)), wantMissed: ManyMissed},
		{name: "more than 100 missed minutes is many missed and runs the most recent", spec: "* * * * *", created: topOfTheHour,
			now: after(3*time.Hour + 30*time.Second), wantEarliest: topOfTheHour, wantRecent: ptrTime(after(3 * time.Hour)), wantMissed: ManyMissed},
		{name: "the last slot equal to creation runs nothing", spec: "0 * * * *", created: topOfTheHour, last: ptrTime(topOfTheHour),
			now: after(30 * time.Second), wantEarliest: topOfTheHour},
		{name: "the last slot counts instead of creation", spec: "*/5 * * * *", created: topOfTheHour, last: ptrTime(after(30 * time.Minute)),
			now: after(31 * time.Minute), wantEarliest: after(30 * time.Minute)},
		{name: "a deadline not reached leaves the last slot as earliest", spec: "*/5 * * * *", created: topOfTheHour, last: ptrTime(after(30 * time.Minute)), deadline: ptrInt(60),
			now: after(31 * time.Minute), wantEarliest: after(30 * time.Minute)},
		{name: "a passed deadline moves earliest to now minus the deadline", spec: "*/5 * * * *", created: topOfTheHour, last: ptrTime(after(30 * time.Minute)), deadline: ptrInt(60), withDeadline: true,
			now: after(32 * time.Minute), wantEarliest: after(31 * time.Minute)},
		{name: "a slot older than the deadline is not run", spec: "0 * * * *", created: topOfTheHour, deadline: ptrInt(60), withDeadline: true,
			now: after(time.Hour + 2*time.Minute), wantEarliest: after(time.Hour + time.Minute)},
		{name: "a slot within the deadline runs", spec: "0 * * * *", created: topOfTheHour, deadline: ptrInt(300), withDeadline: true,
			now: after(time.Hour + 2*time.Minute), wantEarliest: after(57 * time.Minute), wantRecent: ptrTime(after(time.Hour))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, tc.spec, "")
			earliest := Earliest(tc.created, tc.last, nil, tc.deadline, tc.now, tc.withDeadline)
			if !earliest.Equal(tc.wantEarliest) {
				t.Errorf("earliest = %v, want %v", earliest, tc.wantEarliest)
			}
			recent, missed := s.MostRecent(earliest, tc.now)
			if (recent == nil) != (tc.wantRecent == nil) || (recent != nil && !recent.Equal(*tc.wantRecent)) {
				t.Errorf("most recent = %v, want %v", recent, tc.wantRecent)
			}
			if missed != tc.wantMissed {
				t.Errorf("missed = %v, want %v", missed, tc.wantMissed)
			}
		})
	}
}

func TestEarliestIgnoresSlotsBeforeTheScheduleWasSeen(t *testing.T) {
	// Hourly at :00 until 10:40, then edited to :30. Without the edit time, 10:30 would run
	// retroactively at 10:40 (upstream does); with it, the next run is 11:30.
	s := mustParse(t, "30 * * * *", "")
	now := after(40 * time.Minute)
	earliest := Earliest(topOfTheHour.Add(-24*time.Hour), ptrTime(topOfTheHour), ptrTime(now), nil, now, true)
	if recent, _ := s.MostRecent(earliest, now); recent != nil {
		t.Fatalf("most recent = %v, want none: an edit must not fire for the past", recent)
	}
	if _, next, _ := s.RequeueAfter(earliest, now); !next.Equal(after(90 * time.Minute)) {
		t.Fatalf("next = %v, want 11:30", next)
	}
}

// TestRequeueAfter ports upstream's TestNextScheduleTimeDuration.
func TestRequeueAfter(t *testing.T) {
	cases := []struct {
		name     string
		spec     string
		earliest time.Time
		now      time.Time
		want     time.Duration
	}{
		{"a complex schedule skipping the weekend waits for Monday's slot", "30 6-16/4 * * 1-5", after(30 * time.Minute), after(24*time.Hour + 31*time.Minute), 3*time.Hour + 59*time.Minute + Padding},
		{"another complex schedule skipping the weekend", "30 10,11,12 * * 1-5", after(30 * time.Minute), after(30*time.Hour + 30*time.Minute), 66*time.Hour + Padding},
		{"a weekly schedule that missed two runs waits for the next one", "0 12 * * 4", after(2 * time.Hour), after(19*24*time.Hour + time.Hour + 30*time.Minute), 48*time.Hour + 30*time.Minute + Padding},
		{"a schedule that never ran waits from creation", "0 12 * * 5", topOfTheHour, after(6 * time.Hour), 20*time.Hour + Padding},
		{"an every-minute schedule waits to the next minute", "* * * * *", topOfTheHour, after(10 * time.Second), 50*time.Second + Padding},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, ok := mustParse(t, tc.spec, "").RequeueAfter(tc.earliest, tc.now)
			if !ok || got != tc.want {
				t.Errorf("requeue = %v (ok %v), want %v", got, ok, tc.want)
			}
		})
	}
}

func TestTimeZonesAndDST(t *testing.T) {
	cases := []struct {
		name, spec, tz string
		from           string
		want           []string // the next slots in UTC
	}{
		{"a schedule in a zone fires at local time", "0 9 * * *", "Europe/Berlin", "2026-06-01T00:00:00Z",
			[]string{"2026-06-01T07:00:00Z", "2026-06-02T07:00:00Z"}},
		{"no zone means UTC", "0 9 * * *", "", "2026-06-01T00:00:00Z",
			[]string{"2026-06-01T09:00:00Z", "2026-06-02T09:00:00Z"}},
		{"a fixed local time in the hour repeated at fall-back runs once", "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"an hourly schedule runs in both copies of the repeated hour", "30 * * * *", "Europe/Berlin", "2026-10-24T23:00:00Z",
			[]string{"2026-10-24T23:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}},
		{"a local time skipped at spring-forward does not run that day", "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z",
			[]string{"2026-03-30T00:30:00Z"}},
		{"US fall-back repeats 01:30 once", "30 1 * * *", "America/New_York", "2026-11-01T00:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		// Six slots in the repeated hour: the first copy runs all six, the second none (the rule
		// used to give up after four repeats and run 02:40 CET).
		{"every slot in the second copy of the repeated hour is dropped, however many", "*/10 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T00:10:00Z", "2026-10-25T00:20:00Z", "2026-10-25T00:30:00Z", "2026-10-25T00:40:00Z", "2026-10-25T00:50:00Z",
				"2026-10-26T01:00:00Z"}},
		// The hour field starts with *: every two hours runs at 02:00 CEST and 02:00 CET (it was
		// read as a list of fixed hours, and ran 02:00 CEST then 04:00 CET).
		{"a stepped hour field (*/2) runs in both copies of the repeated hour", "0 */2 * * *", "Europe/Berlin", "2026-10-24T21:30:00Z",
			[]string{"2026-10-24T22:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T03:00:00Z"}},
		{"@hourly runs in both copies of the repeated hour", "@hourly", "Europe/Berlin", "2026-10-24T23:30:00Z",
			[]string{"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z"}},
		{"a range of hours runs each local time once", "0 1-3 * * *", "Europe/Berlin", "2026-10-24T22:30:00Z",
			[]string{"2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-26T00:00:00Z"}},
		// Lord Howe falls back 30 minutes (02:00 +11 -> 01:30 +10:30): 01:30-01:59 repeat.
		{"a 30-minute fall-back drops only the repeated half hour", "*/10 1 * * *", "Australia/Lord_Howe", "2026-04-04T13:00:00Z",
			[]string{"2026-04-04T14:00:00Z", "2026-04-04T14:10:00Z", "2026-04-04T14:20:00Z", "2026-04-04T14:30:00Z", "2026-04-04T14:40:00Z", "2026-04-04T14:50:00Z",
				"2026-04-05T14:30:00Z"}},
		{"a local time skipped at spring-forward does not run that day, the hours around it do", "30 1-3 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z",
			[]string{"2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z", "2026-03-29T23:30:00Z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, tc.spec, tc.tz)
			cur := mustTime(tc.from)
			for _, w := range tc.want {
				cur = s.Next(cur)
				if !cur.Equal(mustTime(w)) {
					t.Fatalf("next = %v, want %v", cur.UTC(), w)
				}
			}
		})
	}
}

func TestOnce(t *testing.T) {
	at := topOfTheHour
	cases := []struct {
		name     string
		deadline *int64
		now      time.Time
		want     OnceAction
		requeue  time.Duration
	}{
		{"before the time it waits exactly until then", nil, at.Add(-90 * time.Second), Wait, 90*time.Second + Padding},
		{"at the time it runs", nil, at, Run, 0},
		{"hours late without a deadline it still runs", nil, at.Add(5 * time.Hour), Run, 0},
		{"within the deadline it runs", ptrInt(60), at.Add(60 * time.Second), Run, 0},
		{"past the deadline it is too late", ptrInt(60), at.Add(61 * time.Second), TooLate, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, d := Once(at, tc.deadline, tc.now)
			if got != tc.want || d != tc.requeue {
				t.Errorf("Once = %v, %v; want %v, %v", got, d, tc.want, tc.requeue)
			}
		})
	}
}
