package scheduledjob

import (
	"hash/fnv"
	"time"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

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
