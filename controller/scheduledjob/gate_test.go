package scheduledjob

import (
	"context"
	"testing"
	"time"
)

func TestCreateGate(t *testing.T) {
	ctx := context.Background()
	t.Run("no create in flight: no wait", func(t *testing.T) {
		var g createGate
		if !g.wait(ctx, 0) {
			t.Fatal("wait on an idle gate reported a timeout")
		}
	})
	t.Run("a create in flight holds the waiter until it ends", func(t *testing.T) {
		var g createGate
		g.begin()
		g.begin()
		done := make(chan bool)
		go func() { done <- g.wait(ctx, time.Minute) }()
		g.end()
		select {
		case <-done:
			t.Fatal("wait returned with a create still in flight")
		case <-time.After(50 * time.Millisecond):
		}
		g.end()
		select {
		case ok := <-done:
			if !ok {
				t.Fatal("wait reported a timeout, want released by the last end")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("wait did not return after the last create ended")
		}
		if !g.wait(ctx, 0) {
			t.Fatal("the gate is not idle again")
		}
	})
	t.Run("the wait is bounded", func(t *testing.T) {
		var g createGate
		g.begin()
		defer g.end()
		if g.wait(ctx, 10*time.Millisecond) {
			t.Fatal("wait reported idle with a create in flight")
		}
	})
	t.Run("a cancelled context ends the wait", func(t *testing.T) {
		var g createGate
		g.begin()
		defer g.end()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if g.wait(cctx, time.Minute) {
			t.Fatal("wait reported idle with a create in flight")
		}
	})
}
