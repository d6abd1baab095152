package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

func TestScheduleCommand(t *testing.T) {
	// The clock the command would read when --from is not given.
	now := time.Date(2026, 3, 10, 12, 34, 56, 0, time.UTC)
	cases := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{
			name: "nine in the morning in Seoul is midnight UTC, and --from counts when it is a slot",
			args: []string{"--schedule", "0 9 * * *", "--time-zone", "Asia/Seoul", "--from", "2026-01-01T00:00:00Z", "--count", "2"},
			want: "2026-01-01T00:00:00Z\t2026-01-01T09:00:00+09:00\n2026-01-02T00:00:00Z\t2026-01-02T09:00:00+09:00\n",
		},
		{
			name: "a fractional --from rounds up to the next second, not back to the slot before it",
			args: []string{"--schedule", "0 9 * * *", "--time-zone", "Asia/Seoul", "--from", "2026-01-01T00:00:00.5Z", "--count", "1"},
			want: "2026-01-02T00:00:00Z\t2026-01-02T09:00:00+09:00\n",
		},
		{
			name: "without a time zone the schedule is read in UTC",
			args: []string{"--schedule", "*/30 * * * *", "--from", "2026-01-01T00:10:00+09:00", "--count", "2"},
			want: "2025-12-31T15:30:00Z\t2025-12-31T15:30:00Z\n2025-12-31T16:00:00Z\t2025-12-31T16:00:00Z\n",
		},
		{
			name: "without --from the runs start at the clock's now",
			args: []string{"--schedule", "@hourly", "--count", "1"},
			want: "2026-03-10T13:00:00Z\t2026-03-10T13:00:00Z\n",
		},
		{
			name: "the count defaults to five",
			args: []string{"--schedule", "0 0 1 * *", "--from", "2026-01-01T00:00:01Z"},
			want: "2026-02-01T00:00:00Z\t2026-02-01T00:00:00Z\n2026-03-01T00:00:00Z\t2026-03-01T00:00:00Z\n2026-04-01T00:00:00Z\t2026-04-01T00:00:00Z\n" +
				"2026-05-01T00:00:00Z\t2026-05-01T00:00:00Z\n2026-06-01T00:00:00Z\t2026-06-01T00:00:00Z\n",
		},
		{
			name: "a local time repeated by the fall-back change runs once, as the controller runs it",
			args: []string{"--schedule", "30 1 * * *", "--time-zone", "America/New_York", "--from", "2026-10-31T00:00:00Z", "--count", "3"},
			want: "2026-10-31T05:30:00Z\t2026-10-31T01:30:00-04:00\n2026-11-01T05:30:00Z\t2026-11-01T01:30:00-04:00\n2026-11-02T06:30:00Z\t2026-11-02T01:30:00-05:00\n",
		},
		{
			name: "a local time skipped by the spring-forward change does not run that day",
			args: []string{"--schedule", "30 2 * * *", "--time-zone", "America/New_York", "--from", "2026-03-07T12:00:00Z", "--count", "2"},
			want: "2026-03-09T06:30:00Z\t2026-03-09T02:30:00-04:00\n2026-03-10T06:30:00Z\t2026-03-10T02:30:00-04:00\n",
		},
		{
			name:    "an unknown time zone is the controller's UnknownTimeZone error",
			args:    []string{"--schedule", "0 9 * * *", "--time-zone", "Asia/Seol"},
			wantErr: `unknown time zone "Asia/Seol"`,
		},
		{
			name:    "a schedule that does not parse is an error",
			args:    []string{"--schedule", "0 25 * * *", "--from", "2026-01-01T00:00:00Z"},
			wantErr: `unparseable schedule "0 25 * * *"`,
		},
		{
			name:    "a schedule naming no real day is an error",
			args:    []string{"--schedule", "0 0 30 2 *", "--from", "2026-01-01T00:00:00Z"},
			wantErr: "schedule never fires",
		},
		{
			name:    "the runs stop with an error when the next is more than five years away",
			args:    []string{"--schedule", "0 0 29 2 *", "--from", "2096-01-01T00:00:00Z", "--count", "2"},
			want:    "2096-02-29T00:00:00Z\t2096-02-29T00:00:00Z\n",
			wantErr: "no further run within five years",
		},
		{
			name:    "the schedule is required",
			args:    []string{"--time-zone", "Asia/Seoul"},
			wantErr: "--schedule is required",
		},
		{
			name:    "an unquoted schedule leaves stray arguments, which are an error",
			args:    []string{"--schedule", "0", "9", "*", "*", "*"},
			wantErr: "unexpected arguments",
		},
		{
			name:    "a count of zero is an error",
			args:    []string{"--schedule", "@daily", "--count", "0"},
			wantErr: "--count must be between 1 and 10000",
		},
		{
			name:    "a --from that is not RFC 3339 is an error",
			args:    []string{"--schedule", "@daily", "--from", "2026-01-01"},
			wantErr: "not an RFC 3339 time",
		},
		{
			name:    "an unknown flag is an error",
			args:    []string{"--schedule", "@daily", "--timezone", "UTC"},
			wantErr: "flag provided but not defined",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := runSchedule(tc.args, now, &stdout, &stderr)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("error = %v (stderr %q)", err, stderr.String())
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if got := stdout.String(); got != tc.want {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestScheduleHelpNamesTheFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := runSchedule([]string{"-h"}, time.Time{}, &stdout, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v, want flag.ErrHelp (exit 0)", err)
	}
	for _, f := range []string{"Usage: manager schedule", "--schedule", "--time-zone", "--from", "--count"} {
		if !strings.Contains(stdout.String(), f) {
			t.Errorf("usage on stdout lacks %q:\n%s", f, stdout.String())
		}
	}
}
