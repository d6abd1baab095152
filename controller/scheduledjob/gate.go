package scheduledjob

import (
	"context"
	"sync"
	"time"
)

// createGate lets writes that can wait (status patches, history deletes) hold back while Job
// creates are in flight, so that at a slot shared by many ScheduledJobs the API server spends
// itself on the creates first. Creates never wait for it.
type createGate struct {
	mu       sync.Mutex
	inflight int
	idle     chan struct{} // closed when inflight drops to zero
}

func (g *createGate) begin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight == 0 {
		g.idle = make(chan struct{})
	}
	g.inflight++
}

func (g *createGate) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.inflight == 0 {
		close(g.idle)
	}
}

// wait returns when no create is in flight, or after at most limit (false then), or when ctx ends.
func (g *createGate) wait(ctx context.Context, limit time.Duration) bool {
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
