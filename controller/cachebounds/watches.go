package cachebounds

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// What a watch keeps, and the bound of it (docs/architecture.md, "The caches, each with its
// bound"). A watch's decoder keeps buffers as large as the largest event it read, for the watch's
// life (a transform bounds what an informer keeps of an object, not what its watch keeps); an
// informer has one watch at a time, so a tenant adds per informer about 4 times its largest
// event, whatever the count or size of its objects. Every watch of a cache built here
// (boundWatches):
//
//   - asks the API server to end it within MaxWatchTimeout (client-go asks for 5 to 10 minutes),
//     the streaming list of an informer's initial objects excepted (ended before its end
//     bookmark, it would start again); the reflector resumes from the last resourceVersion it
//     saw, listing nothing again: one watch request per informer per MaxWatchTimeout.
//   - once stopped, drops the watch it wrapped and reads it until it closes: client-go's
//     reflector (v0.36) keeps an informer's first watch for the informer's life, and
//     apimachinery's watch.Filter (around every metadata-only watch) blocks for ever on an event
//     in flight once its reader is gone (kubernetes/kubernetes#113254: drain it).
//
// TestStoppedWatchesAreReleased, TestAStoppedWatchLeavesNoGoroutine, TestWatchesEndWithinTheCap;
// TestACachesMemoryDoesNotGrowWithATenantsObjects on a real API server.

// MaxWatchTimeout is the longest a watch of a cache built here lasts, the streaming list of an
// informer's initial objects excepted.
const MaxWatchTimeout = time.Minute

// maxWatchSeconds is MaxWatchTimeout, in the unit of a watch request.
const maxWatchSeconds = int64(MaxWatchTimeout / time.Second)

// boundWatches returns lw with every watch it opens bounded as above. controller-runtime passes a
// ListWatch; a copy keeps its other fields.
func boundWatches(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	l, ok := lw.(*toolscache.ListWatch)
	if !ok {
		w := toolscache.ToListerWatcherWithContext(lw)
		l = &toolscache.ListWatch{ListWithContextFunc: w.ListWithContext, WatchFuncWithContext: w.WatchWithContext}
	}
	c := *l
	c.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		listing := o.SendInitialEvents != nil && *o.SendInitialEvents
		if !listing && (o.TimeoutSeconds == nil || *o.TimeoutSeconds > maxWatchSeconds) {
			o.TimeoutSeconds = new(maxWatchSeconds)
		}
		w, err := l.WatchWithContext(ctx, o)
		if err != nil || w == nil {
			return w, err
		}
		return &releasingWatch{w: w, ch: w.ResultChan()}, nil
	}
	c.WatchFunc = nil //nolint:staticcheck // the deprecated form is cleared so that Watch, without a context, goes through the above too
	return &c
}

// releasingWatch is the watch a cache's reflector reads: the wrapped watch's channel, and the
// wrapped watch until it is stopped. Whoever holds it after that holds a few words and a closed
// channel. Stop may be called more than once, as the reflector does.
type releasingWatch struct {
	ch <-chan watch.Event
	mu sync.Mutex
	w  watch.Interface // nil once stopped
}

func (r *releasingWatch) ResultChan() <-chan watch.Event { return r.ch }

// Stop stops the wrapped watch, drops it, and reads what it still sends until it closes (its
// reader, the reflector, has stopped reading).
func (r *releasingWatch) Stop() {
	r.mu.Lock()
	w := r.w
	r.w = nil
	r.mu.Unlock()
	if w == nil {
		return
	}
	w.Stop()
	go func() {
		for range r.ch {
		}
	}()
}
