package cachebounds

import (
	"runtime/debug"
	"sync"
	"time"
)

// After a heavy event has passed through a watch (HeavyEventBytes), the event, what it was
// decoded from and the watch's grown buffers are garbage once the watch is renewed, but the Go
// runtime hands the pages they took back to the system only gradually (its background scavenger):
// a tenant's burst of large objects left the manager's RSS raised by 15 to 20 MiB for minutes
// with the live heap back where it was (the hostile bench, docs/benchmarks.md). So once heavy
// events have stopped for ReturnQuiet, the memory is handed back at once (debug.FreeOSMemory: a
// collection and a scavenge), at most once per ReturnGap whatever a tenant sends, and at least
// once per ReturnGap while heavy events keep coming.
const (
	ReturnQuiet = 5 * time.Second
	ReturnGap   = 30 * time.Second
)

// returnDue says when memory is next handed back after a heavy event at now: ReturnQuiet after
// it, not sooner than ReturnGap after the last return (last), and, when a return is already
// pending since pendingSince, not later than ReturnGap after that.
func returnDue(now, last, pendingSince time.Time, pending bool, quiet, gap time.Duration) time.Time {
	due := now.Add(quiet)
	if next := last.Add(gap); !last.IsZero() && due.Before(next) {
		due = next
	}
	if latest := pendingSince.Add(gap); pending && due.After(latest) {
		due = latest
	}
	return due
}

// memoryReturner schedules the returns; heavy is called by each watch renewed after a heavy
// event.
type memoryReturner struct {
	mu           sync.Mutex
	quiet, gap   time.Duration
	now          func() time.Time
	free         func()
	timer        *time.Timer
	pending      bool
	pendingSince time.Time
	last         time.Time
	returned     int64
}

var returner = &memoryReturner{quiet: ReturnQuiet, gap: ReturnGap, now: time.Now, free: debug.FreeOSMemory}

func (r *memoryReturner) heavy() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	due := returnDue(now, r.last, r.pendingSince, r.pending, r.quiet, r.gap)
	if !r.pending {
		r.pending, r.pendingSince = true, now
	}
	if r.timer == nil {
		r.timer = time.AfterFunc(due.Sub(now), r.fire)
		return
	}
	r.timer.Reset(due.Sub(now))
}

func (r *memoryReturner) fire() {
	r.mu.Lock()
	r.pending, r.last = false, r.now()
	r.returned++
	r.mu.Unlock()
	r.free()
}

// MemoryReturns counts the times memory was handed back after heavy events, for tests.
func MemoryReturns() int64 {
	returner.mu.Lock()
	defer returner.mu.Unlock()
	return returner.returned
}
