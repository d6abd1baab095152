package cachebounds

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// What a watch keeps, and the bound of it.
//
// A watch's decoder keeps a buffer as large as the largest event it read, for the watch's life
// (apimachinery's streaming decoder grows it and never shrinks it; a JSON watch's framer has a
// second one): a transform bounds what an informer keeps of an object, not what the watch that
// brought it keeps. An informer has one watch at a time, so what a tenant can add to a cache's
// memory beyond the bounded objects is, per informer, about 4 times the largest event that
// informer carries (each buffer up to twice it), whatever the count or size of its objects
// (docs/architecture.md, "The caches, each with its bound"). Every watch of a cache built
// here (boundWatches):
//
//   - asks the API server to end it within MaxWatchTimeout, unless it is the streaming list of an
//     informer's initial objects (ended before its end bookmark, the list would start again).
//     client-go's reflector asks for 5 to 10 minutes; after MaxWatchTimeout the reflector
//     resumes from the last resourceVersion it saw (from the API server's watch cache; nothing
//     is listed again), so a heavy event's buffers stay live at most that long, for one watch
//     request per informer per MaxWatchTimeout, whatever a tenant writes.
//   - once stopped, no longer refers to the watch it wrapped, and reads what that watch still
//     sends until it closes. client-go's reflector (tools/cache, v0.36) keeps an informer's
//     first watch in a local of ListAndWatchWithContext for its deferred Stop, for the
//     informer's whole life; and apimachinery's watch.Filter (controller-runtime wraps every
//     metadata-only watch in one) blocks for ever on an event in flight once its reader is
//     gone, holding the stopped watch (kubernetes/kubernetes#113254: draining the result is
//     what its maintainers ask of a consumer).
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
			o.TimeoutSeconds = ptr.To(maxWatchSeconds)
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
