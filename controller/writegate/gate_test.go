package writegate

import (
	"context"
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	ctx := context.Background()
	t.Run("no create in flight: no wait", func(t *testing.T) {
		var g Gate
		if !g.Wait(ctx, 0) {
			t.Fatal("wait on an idle gate reported a timeout")
		}
	})
	t.Run("a create in flight holds the waiter until it ends", func(t *testing.T) {
		var g Gate
		g.Begin()
		g.Begin()
		done := make(chan bool)
		go func() { done <- g.Wait(ctx, time.Minute) }()
		g.End()
		select {
		case <-done:
			t.Fatal("wait returned with a create still in flight")
		case <-time.After(50 * time.Millisecond):
		}
		g.End()
		select {
		case ok := <-done:
			if !ok {
				t.Fatal("wait reported a timeout, want released by the last end")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("wait did not return after the last create ended")
		}
		if !g.Wait(ctx, 0) {
			t.Fatal("the gate is not idle again")
		}
	})
	t.Run("the wait is bounded", func(t *testing.T) {
		var g Gate
		g.Begin()
		defer g.End()
		if g.Wait(ctx, 10*time.Millisecond) {
			t.Fatal("wait reported idle with a create in flight")
		}
	})
	t.Run("a cancelled context ends the wait", func(t *testing.T) {
		var g Gate
		g.Begin()
		defer g.End()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if g.Wait(cctx, time.Minute) {
			t.Fatal("wait reported idle with a create in flight")
		}
	})
}
