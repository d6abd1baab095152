package cachebounds

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// What a watch's decoder keeps, and why the watches of a cache built here are renewed.
//
// A watch's decoder keeps a buffer as large as the largest event it read, for the watch's life
// (apimachinery's streaming.decoder doubles it and never shrinks it, and a JSON watch's framer
// has a second one in its encoding/json.Decoder). A cache's transform bounds what the informer
// keeps of an object, not what the watch that brought it keeps: a tenant's 1 MiB ConfigMap cost
// every informer that saw it 2 MiB and more until the API server ended the watch 5 to 10 minutes
// later, and the streaming list of an informer's initial objects kept its buffers for the
// informer's whole life (below). So every watch of a cache built here:
//
//   - counts the bytes its response body delivers between two events (meteringTransport, on
//     the cache's HTTP client; the watch's request context carries its meter);
//   - once it has delivered an event larger than HeavyEventBytes, is renewed: an ordinary watch
//     ends right after that event, and the reflector opens the next one from the event's
//     resourceVersion (as it does when the API server ends a watch: no list); the streaming list
//     of an informer's initial objects cannot end that way (a watch that ends with no event
//     after the list restarts the whole list), so it is swapped, under the reflector, for a
//     watch from the list's end bookmark. If that watch cannot be opened the heavy one is kept
//     and ends after its next event;
//   - once stopped, no longer refers to the watch it wrapped: client-go's reflector
//     (tools/cache, v0.36) keeps an informer's first watch in a local of
//     ListAndWatchWithContext for its deferred Stop, for the informer's whole life.
//
// Found in the hostile scenario (docs/benchmarks.md); TestStoppedWatchesAreReleased,
// TestHeavyWatchesAreRenewed, and the manager's TestEveryInformerTheManagerStartsIsBounded on a
// real API server.

// HeavyEventBytes is the size of an event, on the wire, after which the watch that read it is
// renewed. Ordinary objects (a Pod, a Job, a certificate's Secret) stay well below it, so a busy
// node's Pod watch is not renewed by its own churn.
const HeavyEventBytes = 64 << 10

// meter counts the bytes a watch's response body delivered since it was last taken.
type meter struct{ n atomic.Int64 }

func (m *meter) take() int64 { return m.n.Swap(0) }

type meterKey struct{}

func withMeter(ctx context.Context, m *meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

func meterFrom(ctx context.Context) *meter {
	m, _ := ctx.Value(meterKey{}).(*meter)
	return m
}

// meteringTransport counts, into the meter of its request's context, the bytes of the response
// body of every request that carries one (the watches of a cache built here).
type meteringTransport struct{ next http.RoundTripper }

func (t meteringTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if m := meterFrom(req.Context()); m != nil && err == nil && resp != nil && resp.Body != nil {
		resp.Body = &meteredBody{ReadCloser: resp.Body, m: m}
	}
	return resp, err
}

type meteredBody struct {
	io.ReadCloser
	m *meter
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.m.n.Add(int64(n))
	return n, err
}

// metered returns c with its transport counting the bytes of watches (a copy: c is shared with
// the manager's client).
func metered(c *http.Client) *http.Client {
	out := *c
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	out.Transport = meteringTransport{next: next}
	return &out
}

// releaseStoppedWatches returns lw with every watch it opens wrapped by a releasingWatch:
// metered, renewed after a heavy event, released once stopped. renewed counts the renewals.
func releaseStoppedWatches(lw toolscache.ListerWatcher, renewed *atomic.Int64) toolscache.ListerWatcher {
	if l, ok := lw.(*toolscache.ListWatch); ok {
		// What controller-runtime passes: a copy keeps its other fields (DisableChunking). The
		// reflector watches through WatchWithContext, which calls WatchFuncWithContext first.
		c := *l
		c.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return releasing(ctx, o, l.WatchWithContext, renewed)
		}
		return &c
	}
	return &releasingListerWatcher{inner: toolscache.ToListerWatcherWithContext(lw), orig: lw, renewed: renewed}
}

// releasingListerWatcher is releaseStoppedWatches for a ListerWatcher other than a ListWatch.
type releasingListerWatcher struct {
	inner   toolscache.ListerWatcherWithContext
	orig    toolscache.ListerWatcher
	renewed *atomic.Int64
}

func (r *releasingListerWatcher) List(o metav1.ListOptions) (runtime.Object, error) {
	return r.inner.ListWithContext(context.Background(), o)
}

func (r *releasingListerWatcher) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return r.inner.ListWithContext(ctx, o)
}

func (r *releasingListerWatcher) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return releasing(context.Background(), o, r.inner.WatchWithContext, r.renewed)
}

func (r *releasingListerWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return releasing(ctx, o, r.inner.WatchWithContext, r.renewed)
}

// IsWatchListSemanticsUnSupported keeps what the wrapped one says (the reflector asks).
func (r *releasingListerWatcher) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(r.orig)
}

type openFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)

func releasing(ctx context.Context, o metav1.ListOptions, open openFunc, renewed *atomic.Int64) (watch.Interface, error) {
	m := &meter{}
	w, err := open(withMeter(ctx, m), o)
	if err != nil || w == nil {
		return w, err
	}
	r := &releasingWatch{w: w, out: make(chan watch.Event), done: make(chan struct{})}
	listing := o.SendInitialEvents != nil && *o.SendInitialEvents
	reopen := func(rv string) (watch.Interface, *meter, error) {
		next := o
		next.ResourceVersion, next.ResourceVersionMatch, next.SendInitialEvents = rv, "", nil
		m := &meter{}
		w, err := open(withMeter(ctx, m), next)
		return w, m, err
	}
	go r.run(w, m, listing, reopen, renewed)
	return r, nil
}

// releasingWatch is the watch a cache's reflector reads: it forwards the events of the watch it
// wraps, renews it after a heavy event, and drops it (its decoder, its buffers, its response
// body) when stopped: whoever still holds it after that holds a few words. Stop may be called
// more than once, as the reflector does.
type releasingWatch struct {
	mu   sync.Mutex
	w    watch.Interface // nil once stopped
	out  chan watch.Event
	done chan struct{}
	once sync.Once
}

func (r *releasingWatch) ResultChan() <-chan watch.Event { return r.out }

func (r *releasingWatch) Stop() {
	r.once.Do(func() { close(r.done) })
	r.mu.Lock()
	w := r.w
	r.w = nil
	r.mu.Unlock()
	if w != nil {
		release(w)
	}
}

// release stops w and reads what it still sends until it closes. A watch may have an event in
// flight when it is stopped, and not every watch gives it up: apimachinery's watch.Filter
// (controller-runtime wraps every metadata-only watch in one) blocks on sending it for ever, with
// the stopped watch, its decoder and its buffers: one goroutine and up to a large object's bytes
// per watch renewed in a flood, without this (TestRenewedWatchesLeaveNoGoroutine). Upstream:
// kubernetes/kubernetes#113254; draining the result is what its maintainers ask of a consumer
// (kubernetes/kubernetes#139321, closed).
func release(w watch.Interface) {
	w.Stop()
	go func() {
		for range w.ResultChan() {
		}
	}()
}

// swap makes next the wrapped watch, unless the watch was stopped meanwhile.
func (r *releasingWatch) swap(next watch.Interface) bool {
	r.mu.Lock()
	prev := r.w
	if prev != nil {
		r.w = next
	}
	r.mu.Unlock()
	if prev == nil {
		release(next)
		return false
	}
	release(prev)
	return true
}

// run forwards w's events until w ends or the watch is stopped. It holds w and m in its locals
// only: once it returns, nothing of them is reachable from r.
func (r *releasingWatch) run(w watch.Interface, m *meter, listing bool, reopen func(string) (watch.Interface, *meter, error), renewed *atomic.Int64) {
	defer close(r.out)
	defer r.Stop()
	heavy := false
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-r.done:
			return
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return // the API server ended it: the reflector watches again
		}
		if m.take() > HeavyEventBytes {
			heavy = true
		}
		select {
		case r.out <- ev:
		case <-r.done:
			return
		}
		end := listing && initialEventsEnd(ev)
		if end {
			listing = false // what follows on this watch is an ordinary watch's
		}
		switch {
		case !heavy || ev.Type == watch.Error:
		case listing:
			// Ending the list before its end restarts it: renewed at the end bookmark.
		case end:
			rv := resourceVersion(ev)
			if rv == "" {
				continue
			}
			next, nm, err := reopen(rv)
			if err != nil || next == nil {
				continue // kept, and ended after its next event
			}
			if !r.swap(next) {
				return
			}
			w, m, heavy = next, nm, false
			renewed.Add(1)
			returner.heavy()
		default:
			// Received by the reflector, which has recorded its resourceVersion before it reads
			// the channel again and finds it closed.
			renewed.Add(1)
			returner.heavy()
			return
		}
	}
}

func initialEventsEnd(ev watch.Event) bool {
	if ev.Type != watch.Bookmark {
		return false
	}
	a, err := meta.Accessor(ev.Object)
	return err == nil && a.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

func resourceVersion(ev watch.Event) string {
	a, err := meta.Accessor(ev.Object)
	if err != nil {
		return ""
	}
	return a.GetResourceVersion()
}
