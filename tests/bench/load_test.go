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
