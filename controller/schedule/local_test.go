package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestResolveLocal(t *testing.T) {
	for _, tc := range []struct {
		zone, local string
		want        string // RFC 3339 instant
		note        string // fragment of the note, "" for none
	}{
		{"Europe/Berlin", "2026-12-06T03:00:00", "2026-12-06T03:00:00+01:00", ""},
		{"Europe/Berlin", "2026-07-01T12:00:00", "2026-07-01T12:00:00+02:00", ""},
		// Spring forward 2026-03-29 02:00 CET -> 03:00 CEST: 02:30 does not exist.
		{"Europe/Berlin", "2026-03-29T02:30:00", "2026-03-29T03:30:00+02:00", "does not exist"},
		{"Europe/Berlin", "2026-03-29T01:59:59", "2026-03-29T01:59:59+01:00", ""},
		{"Europe/Berlin", "2026-03-29T03:00:00", "2026-03-29T03:00:00+02:00", ""},
		// Fall back 2026-10-25 03:00 CEST -> 02:00 CET: 02:30 happens twice; the first is CEST.
		{"Europe/Berlin", "2026-10-25T02:30:00", "2026-10-25T02:30:00+02:00", "occurs twice"},
		{"America/New_York", "2026-03-08T02:15:00", "2026-03-08T03:15:00-04:00", "does not exist"},
		{"America/New_York", "2026-11-01T01:30:00", "2026-11-01T01:30:00-04:00", "occurs twice"},
		// Lord Howe moves by 30 minutes: 2026-10-04 02:00 -> 02:30.
		{"Australia/Lord_Howe", "2026-10-04T02:10:00", "2026-10-04T02:40:00+11:00", "does not exist"},
		{"Australia/Lord_Howe", "2026-04-05T01:45:00", "2026-04-05T01:45:00+11:00", "occurs twice"},
		// Samoa skipped 2011-12-30 entirely (-10 -> +14).
		{"Pacific/Apia", "2011-12-30T12:00:00", "2011-12-31T12:00:00+14:00", "does not exist"},
		{"Pacific/Apia", "2011-12-29T23:59:59", "2011-12-29T23:59:59-10:00", ""},
		{"UTC", "2026-03-29T02:30:00", "2026-03-29T02:30:00Z", ""},
	} {
		t.Run(tc.zone+" "+tc.local, func(t *testing.T) {
			loc, err := time.LoadLocation(tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			got, note, err := ResolveLocal(tc.local, loc)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := time.Parse(time.RFC3339, tc.want)
			if !got.Equal(want) {
				t.Errorf("ResolveLocal = %s, want %s", got.In(loc).Format(time.RFC3339), tc.want)
			}
			if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
				t.Errorf("note %q, want one containing %q", note, tc.note)
			}
		})
	}
	for _, bad := range []string{"2026-12-06T03:00:00Z", "2026-12-06 03:00:00", "2026-02-30T03:00:00", "tomorrow"} {
		if _, _, err := ResolveLocal(bad, time.UTC); err == nil {
			t.Errorf("%q accepted as a local time", bad)
		}
	}
}
