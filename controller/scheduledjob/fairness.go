package scheduledjob

import (
	"sync"
	"time"
)

// slotPriority is the work-queue priority of a pass that falls due at a slot, for a namespace's
// first ScheduledJob due at that instant; its second gets one less, and so on. It is above the
// priority of watch events (0), so at a shared slot the creates go before the passes that only
// record status, and the queue (controller/fairqueue, priorities first) serves every namespace's
// first slot before any namespace's second.
const slotPriority = 1 << 20

// fairShare ranks the ScheduledJobs due at the same instant within their namespace, so that one
// tenant with thousands of schedules on a shared minute delays another tenant's single schedule
// by one round of the workers at most, not by its whole backlog.
type fairShare struct {
	mu sync.Mutex
	// due is instant (Unix second) -> namespace -> name -> rank (0 first).
	// store: one entry per ScheduledJob due within the last minute, about 150 bytes each (the
	// names are bounded by the API server), so at most 150 bytes per ScheduledJob; paid by the
	// tenants who create ScheduledJobs.
	due       map[int64]map[string]map[string]int
	lastPrune time.Time
}

// priority is the queue priority of namespace/name's pass due at at. Asking again for the same
// object and instant gives the same answer. Instants more than a minute before now are forgotten
// (at most once a minute).
func (f *fairShare) priority(namespace, name string, at, now time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.due == nil {
		f.due = map[int64]map[string]map[string]int{}
	}
	if now.Sub(f.lastPrune) >= time.Minute {
		for sec := range f.due {
			if time.Unix(sec, 0).Before(now.Add(-time.Minute)) {
				delete(f.due, sec)
			}
		}
		f.lastPrune = now
	}
	sec := at.Unix()
	byNS := f.due[sec]
	if byNS == nil {
		byNS = map[string]map[string]int{}
		f.due[sec] = byNS
	}
	ranks := byNS[namespace]
	if ranks == nil {
		ranks = map[string]int{}
		byNS[namespace] = ranks
	}
	rank, ok := ranks[name]
	if !ok {
		rank = len(ranks)
		ranks[name] = rank
	}
	return slotPriority - min(rank, slotPriority-1)
}
