package cachebounds

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// heavyWatch stands for a watch whose decoder grew its buffer to a large object's size.
type heavyWatch struct {
	ch       chan watch.Event
	payload  *[1 << 20]byte
	done     chan struct{}
	stopOnce sync.Once
}

func (h *heavyWatch) ResultChan() <-chan watch.Event { return h.ch }
func (h *heavyWatch) Stop()                          { h.stopOnce.Do(func() { close(h.done) }) }

// An informer of a cache built here does not keep a watch once it is stopped and replaced: the
// first one, the streaming list that brought the initial objects, held the largest object's
// buffer for the informer's life (client-go keeps it for a deferred Stop; releaseStoppedWatches).
// The first watch here sends its initial events and ends as the API server ends a watch at its
// timeout; the informer opens a second; then the first's 1 MiB must be collectable.
func TestStoppedWatchesAreReleased(t *testing.T) {
	opts, err := options(Inventory{Name: "watches", Kinds: []Kind{{Object: &corev1.ConfigMap{}, Transform: keep}}}, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu              sync.Mutex
		calls           int
		first           weak.Pointer[[1 << 20]byte]
		firstWasListing bool
		// secondWasListing: the reflector restarted from a list, not the path this test guards.
		secondWasListing bool
	)
	second := make(chan struct{})
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (k8sruntime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			h := &heavyWatch{ch: make(chan watch.Event), payload: new([1 << 20]byte), done: make(chan struct{})}
			mu.Lock()
			calls++
			n := calls
			if n == 1 {
				first = weak.Make(h.payload)
				firstWasListing = o.SendInitialEvents != nil && *o.SendInitialEvents
			}
			mu.Unlock()
			ch, done := h.ch, h.done // the goroutines below must not hold h
			if n > 1 {
				if n == 2 {
					secondWasListing = o.SendInitialEvents != nil && *o.SendInitialEvents
					close(second)
				}
				go func() { <-done; close(ch) }()
				return h, nil
			}
			go func() {
				defer close(ch) // the API server ends the watch
				for _, e := range []watch.Event{
					{Type: watch.Added, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", ResourceVersion: "2"}}},
					{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "2",
						Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}},
					// An event after the list: a watch that ends with none is an error that
					// restarts the whole ListAndWatch, which would drop the first watch anyway.
					{Type: watch.Modified, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", ResourceVersion: "3"}}},
				} {
					select {
					case ch <- e:
					case <-done:
						return
					}
				}
			}()
			return h, nil
		},
	}
	inf := opts.NewInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go inf.RunWithContext(ctx)
	select {
	case <-second:
	case <-time.After(30 * time.Second):
		t.Fatal("the informer opened no second watch after the first ended")
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) || len(inf.GetStore().List()) != 1 {
		t.Fatalf("the informer did not sync the first watch's object: %d objects", len(inf.GetStore().List()))
	}
	mu.Lock()
	listing, relisted := firstWasListing, secondWasListing
	mu.Unlock()
	if !listing || relisted {
		t.Fatalf("the first watch was a streaming list: %v (WatchListClient off?), the second one too: %v (the reflector restarted): this test would not exercise what it guards", listing, relisted)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		mu.Lock()
		gone := first.Value() == nil
		mu.Unlock()
		if gone {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the first watch (the streaming list) is still reachable 10 s after it was stopped and replaced: its buffers stay for the informer's life")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
