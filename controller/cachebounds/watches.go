package cachebounds

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// releaseStoppedWatches returns lw with every watch it opens wrapped so that, once stopped, it
// no longer refers to the watch it wrapped (releasingWatch).
//
// Why: client-go's reflector (tools/cache, v0.36) keeps the first watch of an informer, the
// streaming list (WatchListClient, on by default) that brought the initial objects, in a local of
// ListAndWatchWithContext for its deferred Stop, and that function runs for the informer's whole
// life: the watch is stopped and replaced after 5 to 10 minutes, but stays reachable. A watch's
// decoder keeps a buffer as large as the largest event it read (apimachinery's
// streaming.decoder doubles it, and a JSON watch's framer has a second one in its
// encoding/json.Decoder): a tenant's 850 KiB objects present when an informer starts pinned
// 1.2 MiB and more per informer for the manager's life, whatever the cache's transform kept.
// Found in the hostile scenario (docs/benchmarks.md); TestStoppedWatchesAreReleased.
func releaseStoppedWatches(lw toolscache.ListerWatcher) toolscache.ListerWatcher {
	if l, ok := lw.(*toolscache.ListWatch); ok {
		// What controller-runtime passes: a copy keeps its other fields (DisableChunking). The
		// reflector watches through WatchWithContext, which calls WatchFuncWithContext first.
		c := *l
		c.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return releasing(l.WatchWithContext(ctx, o))
		}
		return &c
	}
	return &releasingListerWatcher{inner: toolscache.ToListerWatcherWithContext(lw), orig: lw}
}

// releasingListerWatcher is releaseStoppedWatches for a ListerWatcher other than a ListWatch.
type releasingListerWatcher struct {
	inner toolscache.ListerWatcherWithContext
	orig  toolscache.ListerWatcher
}

func (r *releasingListerWatcher) List(o metav1.ListOptions) (runtime.Object, error) {
	return r.inner.ListWithContext(context.Background(), o)
}

func (r *releasingListerWatcher) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return r.inner.ListWithContext(ctx, o)
}

func (r *releasingListerWatcher) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return releasing(r.inner.WatchWithContext(context.Background(), o))
}

func (r *releasingListerWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return releasing(r.inner.WatchWithContext(ctx, o))
}

// IsWatchListSemanticsUnSupported keeps what the wrapped one says (the reflector asks).
func (r *releasingListerWatcher) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(r.orig)
}

func releasing(w watch.Interface, err error) (watch.Interface, error) {
	if err != nil || w == nil {
		return w, err
	}
	return &releasingWatch{w: w, ch: w.ResultChan()}, nil
}

// releasingWatch is a watch that drops the one it wraps (its decoder, its buffers, its response
// body) when stopped: whoever still holds it after that holds a few words. Stop may be called
// more than once, as the reflector does.
type releasingWatch struct {
	mu sync.Mutex
	w  watch.Interface
	ch <-chan watch.Event
}

func (r *releasingWatch) ResultChan() <-chan watch.Event { return r.ch }

func (r *releasingWatch) Stop() {
	r.mu.Lock()
	w := r.w
	r.w = nil
	r.mu.Unlock()
	if w != nil {
		w.Stop()
	}
}
