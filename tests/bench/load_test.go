package main

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestRepeatOnTimeout(t *testing.T) {
	timeout := apierrors.NewTimeoutError("the server was unable to return a response in the time allotted", 1)
	other := errors.New("forbidden")
	for _, tc := range []struct {
		name    string
		answers []error // one per call; the last repeats
		limit   time.Duration
		want    error
		calls   int
	}{
		{"a delete that succeeds runs once", []error{nil}, time.Minute, nil, 1},
		{"a delete the API server timed out is repeated until it succeeds", []error{timeout, timeout, nil}, time.Minute, nil, 3},
		{"any other error is returned at once", []error{other}, time.Minute, other, 1},
		{"a timeout after the limit is returned", []error{timeout}, 0, timeout, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := repeatOnTimeout(context.Background(), time.Millisecond, tc.limit, func() error {
				calls++
				return tc.answers[min(calls, len(tc.answers))-1]
			})
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if calls != tc.calls {
				t.Errorf("%d calls, want %d", calls, tc.calls)
			}
		})
	}
}

func TestSlotOutcomesSortJobsByWhenTheyAppeared(t *testing.T) {
	slot := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	o := &jobObserver{seen: map[string]time.Time{
		slotKey("ns", "early", slot):                       slot.Add(2 * time.Second),
		slotKey("ns", "last-second", slot):                 slot.Add(59*time.Second + 999*time.Millisecond),
		slotKey("ns", "at-the-minute", slot):               slot.Add(time.Minute),
		slotKey("ns", "much-later", slot):                  slot.Add(5 * time.Minute),
		slotKey("ns", "other-slot", slot.Add(time.Minute)): slot.Add(time.Minute + time.Second),
		slotKey("other", "early", slot):                    slot,
	}}
	for _, tc := range []struct {
		name   string
		owners []string
		want   slotOutcomes
	}{
		{"a Job within the slot's minute is on time", []string{"early", "last-second"}, slotOutcomes{onTime: 2}},
		{"a Job from the end of the minute on is late, not missing", []string{"at-the-minute", "much-later"}, slotOutcomes{late: 2}},
		{"no Job for the slot is missing, even with one for the next slot", []string{"other-slot", "never"}, slotOutcomes{missing: 2}},
		{"all three at once", []string{"early", "much-later", "never"}, slotOutcomes{onTime: 1, late: 1, missing: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := o.outcomes("ns", tc.owners, slot); got != tc.want {
				t.Errorf("outcomes = %+v, want %+v", got, tc.want)
			}
		})
	}
	var sum slotOutcomes
	sum.add(slotOutcomes{onTime: 1, late: 2, missing: 3})
	sum.add(slotOutcomes{onTime: 10, late: 20, missing: 30})
	if sum != (slotOutcomes{onTime: 11, late: 22, missing: 33}) {
		t.Errorf("sum = %+v", sum)
	}
}
