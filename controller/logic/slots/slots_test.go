package slots

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

func TestJitterOffsetIsStableAndSpread(t *testing.T) {
	const window = time.Hour
	if a, b := jitterOffset("team-a/report", window), jitterOffset("team-a/report", window); a != b {
		t.Fatalf("the same object got %s and %s", a, b)
	}
	if jitterOffset("x/y", 0) != 0 || jitterOffset("x/y", 500*time.Millisecond) != 0 {
		t.Error("a window under a second gives an offset")
	}
	// 1000 objects over an hour: every 6-minute bucket gets a share near 100.
	buckets := make([]int, 10)
	for i := 0; i < 1000; i++ {
		off := jitterOffset(fmt.Sprintf("tenant-%d/hourly", i), window)
		if off < 0 || off >= window || off%time.Second != 0 {
			t.Fatalf("offset %s outside [0, %s) or not whole seconds", off, window)
		}
		buckets[off/(window/10)]++
	}
	for i, n := range buckets {
		if n < 60 || n > 140 {
			t.Errorf("bucket %d holds %d of 1000 offsets (want about 100): %v", i, n, buckets)
		}
	}
	sj := &v1alpha1.ScheduledJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "report"}}
	if JitterOffset(sj) != 0 {
		t.Error("no spec.jitter, yet an offset")
	}
	sj.Spec.Jitter = &metav1.Duration{Duration: window}
	if JitterOffset(sj) != jitterOffset("team-a/report", window) {
		t.Error("JitterOffset is not the hash of namespace/name")
	}
}

func TestSchedulesAndTheObservedKey(t *testing.T) {
	one := &v1alpha1.ScheduledJob{Spec: v1alpha1.ScheduledJobSpec{Schedule: "0 2 * * *"}}
	many := &v1alpha1.ScheduledJob{Spec: v1alpha1.ScheduledJobSpec{Schedule: "ignored", Schedules: []string{"0 9 * * 1-5", "0 12 * * 6"}, TimeZone: ptr.To("Europe/Berlin")}}
	if d := cmp.Diff([]string{"0 2 * * *"}, Schedules(one)); d != "" {
		t.Error(d)
	}
	if d := cmp.Diff([]string{"0 9 * * 1-5", "0 12 * * 6"}, Schedules(many)); d != "" {
		t.Error(d)
	}
	if got := Observed(one); got != " 0 2 * * *" {
		t.Errorf("Observed = %q", got)
	}
	if got := Observed(many); got != "Europe/Berlin 0 9 * * 1-5 | 0 12 * * 6" {
		t.Errorf("Observed = %q", got)
	}
}

func TestObservedSinceIsWhatTheNextPassRecords(t *testing.T) {
	created := time.Date(2026, 11, 1, 8, 0, 30, 0, time.UTC)
	seen := time.Date(2026, 11, 20, 9, 15, 0, 0, time.UTC)
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	sj := func(observed string, at *time.Time) *v1alpha1.ScheduledJob {
		s := &v1alpha1.ScheduledJob{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Time{Time: created}}, Spec: v1alpha1.ScheduledJobSpec{Schedule: "@every 90m"}}
		s.Status.ObservedSchedule = observed
		if at != nil {
			s.Status.ObservedScheduleTime = &metav1.Time{Time: *at}
		}
		return s
	}
	cases := []struct {
		name       string
		sj         *v1alpha1.ScheduledJob
		want       time.Time
		wantEdited bool
	}{
		{"nothing observed yet: since creation", sj("", nil), created, false},
		{"observed, and since when: kept", sj(" @every 90m", &seen), seen, false},
		{"observed, the time lost (a status restored in part): since creation", sj(" @every 90m", nil), created, false},
		{"another schedule observed: an edit, since now", sj(" @every 2h", &seen), now, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, edited := ObservedSince(tc.sj, now)
			if !got.Time.Equal(tc.want) || edited != tc.wantEdited {
				t.Errorf("ObservedSince = %s, edited %t; want %s, %t", got.Time, edited, tc.want, tc.wantEdited)
			}
		})
	}
}
