package slots

import (
	"hash/fnv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// Schedules are the ScheduledJob's cron expressions: spec.schedules, or spec.schedule.
func Schedules(sj *v1alpha1.ScheduledJob) []string {
	if len(sj.Spec.Schedules) > 0 {
		return sj.Spec.Schedules
	}
	return []string{sj.Spec.Schedule}
}

// Observed is status.observedSchedule for sj's spec: its time zone, a space, and its schedules
// joined with " | ". A pass that finds another value there has seen an edit.
func Observed(sj *v1alpha1.ScheduledJob) string {
	return ptr.Deref(sj.Spec.TimeZone, "") + " " + strings.Join(Schedules(sj), " | ")
}

// ObservedSince is status.observedScheduleTime as the next pass leaves it: kept while the
// schedule observed is sj's and the time is set; the creation time on first sight (nothing
// observed yet) or when the time is missing; now when the schedules were edited since (edited).
// Slots before it never run, and @every entries count from its minute (schedule.Anchored).
func ObservedSince(sj *v1alpha1.ScheduledJob, now time.Time) (since metav1.Time, edited bool) {
	st := sj.Status
	switch {
	case st.ObservedSchedule == Observed(sj) && st.ObservedScheduleTime != nil:
		return *st.ObservedScheduleTime, false
	case st.ObservedSchedule == "" || st.ObservedSchedule == Observed(sj):
		return sj.CreationTimestamp, false
	}
	return metav1.Time{Time: now}, true
}

// JitterOffset is how much later than its slots a ScheduledJob starts: a whole number of seconds
// in [0, spec.jitter), the same for an object every time (a hash of its namespace and name, so it
// survives a delete and re-apply from Git) and spread evenly across objects. No jitter: 0.
func JitterOffset(sj *v1alpha1.ScheduledJob) time.Duration {
	if sj.Spec.Jitter == nil {
		return 0
	}
	return jitterOffset(sj.Namespace+"/"+sj.Name, sj.Spec.Jitter.Duration)
}

func jitterOffset(key string, window time.Duration) time.Duration {
	secs := int64(window / time.Second)
	if secs <= 0 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return time.Duration(h.Sum64()%uint64(secs)) * time.Second
}
