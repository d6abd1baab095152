package writegate

import (
	"context"
	"sync"
	"time"
)

// Gate counts the writes users wait for (a Job due at its slot, the copies of a changed
// source) while they are in flight, so that writes that can wait (a ScheduledJob's status
// patch, a history delete) hold back until they are done: at a minute shared by many
// ScheduledJobs and a fan-out, the API server spends itself on what is due first. Those
// writes never wait for it. The zero value is ready to use; one Gate is shared by every
// controller of the manager.
type Gate struct {
	mu       sync.Mutex
	inflight int
	idle     chan struct{} // closed when inflight drops to zero
}

// Begin records a write (or a batch of them) as in flight; End must follow.
func (g *Gate) Begin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight == 0 {
		g.idle = make(chan struct{})
	}
	g.inflight++
}

// End records the end of what Begin started.
func (g *Gate) End() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.inflight == 0 {
		close(g.idle)
	}
}

// Wait returns when nothing is in flight, or after at most limit (false then), or when ctx
// ends.
func (g *Gate) Wait(ctx context.Context, limit time.Duration) bool {
	g.mu.Lock()
	idle, n := g.idle, g.inflight
	g.mu.Unlock()
	if n == 0 {
		return true
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}
