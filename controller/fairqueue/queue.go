package fairqueue

import (
	"cmp"
	"container/heap"
	"container/list"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// Options configure a Queue. The zero value is usable: the rate limiter controller-runtime gives
// its priority queue, no metrics, the real clock.
type Options[T comparable] struct {
	// RateLimiter says how long AddRateLimited waits; nil: per-item exponential from 5 ms to
	// 1000 s, controller-runtime's default for its priority queue.
	RateLimiter workqueue.TypedRateLimiter[T]
	// MetricsProvider makes the workqueue metrics, labelled with the queue's name; nil: none.
	MetricsProvider workqueue.MetricsProvider
	// Clock is read for AddAfter and the metrics; nil: the real clock.
	Clock clock.WithTicker
}

// Queue is a work queue that hands out ready items by priority, highest first, and within a
// priority round robin across lanes (namespaces), each lane first in, first out. Build it with
// New; it must be shut down (ShutDown) to stop its goroutines.
type Queue[T comparable] struct {
	lane        func(T) string
	rateLimiter workqueue.TypedRateLimiter[T]
	clock       clock.WithTicker
	metrics     *queueMetrics[T]

	mu   sync.Mutex
	cond *sync.Cond // signalled when an item becomes ready, a key is Done, or on shutdown
	// items holds every queued key: ready, waiting (for AddAfter or a rate limit) or parked (ready,
	// but the key is still being processed).
	// store: about 200 bytes per queued item, at most one per object the controller watches (a key
	// is queued once); paid by the objects' writers, within the informer inventory.
	items map[T]*item[T]
	// processing holds the keys handed out and not yet Done.
	processing sets.Set[T]
	// levels holds the ready items by priority, highest first; no level is empty.
	levels  []*level[T]
	ready   int
	waiting waitHeap[T]
	// wake tells the timer goroutine that the earliest waiting item changed.
	wake     chan struct{}
	seq      uint64
	shutdown bool
	done     chan struct{}
}

type state int

const (
	stateReady state = iota
	stateWaiting
	stateParked
)

type item[T comparable] struct {
	key      T
	lane     string
	priority int
	state    state
	readyAt  time.Time     // stateWaiting only
	seq      uint64        // when it began to wait: equal ready times keep their order
	elem     *list.Element // its place in its lane (stateReady only)
	index    int           // its place in the waiting heap (stateWaiting only)
}

// level is the ready items of one priority: a ring of lanes served in turn.
type level[T comparable] struct {
	priority int
	// store: about 200 bytes per lane with work (a lane is deleted when its last item leaves); paid
	// by the tenants whose objects are queued, one lane per namespace at most.
	lanes map[string]*lane[T]
	// store: one list element (about 50 bytes) per lane with work; paid by the tenants, as lanes.
	ring *list.List    // of *lane[T]
	next *list.Element // the lane served next
	n    int
}

type lane[T comparable] struct {
	// store: one list element (about 50 bytes) per queued item, counted with the queue's items;
	// paid by the tenant whose objects are queued.
	items *list.List    // of *item[T], oldest first
	elem  *list.Element // its place in the ring
}

var _ priorityqueue.PriorityQueue[string] = &Queue[string]{}

// New starts a queue. name labels its metrics; lane names the lane of an item (for requests,
// their namespace).
func New[T comparable](name string, lane func(T) string, o Options[T]) *Queue[T] {
	q := &Queue[T]{
		lane:        lane,
		rateLimiter: cmp.Or(o.RateLimiter, workqueue.NewTypedItemExponentialFailureRateLimiter[T](5*time.Millisecond, 1000*time.Second)),
		clock:       cmp.Or[clock.WithTicker](o.Clock, clock.RealClock{}),
		items:       map[T]*item[T]{},
		processing:  sets.New[T](),
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
	}
	q.cond = sync.NewCond(&q.mu)
	q.metrics = newQueueMetrics[T](o.MetricsProvider, name, q.clock)
	go q.moveWaiting()
	if q.metrics != nil {
		go q.updateUnfinishedWork()
	}
	return q
}

// Add queues item, ready now, at priority 0.
func (q *Queue[T]) Add(item T) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

// AddAfter queues item to be ready after d.
func (q *Queue[T]) AddAfter(item T, d time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: d}, item)
}

// AddRateLimited queues item to be ready when the rate limiter says.
func (q *Queue[T]) AddRateLimited(item T) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// AddWithOpts queues items. An item already queued stays one item: it keeps the higher of its
// priorities and the earlier of its ready times; raised to a higher priority it goes to the end
// of its lane there. With both After and RateLimited the shorter wait wins.
func (q *Queue[T]) AddWithOpts(o priorityqueue.AddOpts, items ...T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	for _, key := range items {
		q.add(key, o)
	}
}

func (q *Queue[T]) add(key T, o priorityqueue.AddOpts) {
	after := o.After
	if o.RateLimited {
		if rl := q.rateLimiter.When(key); after <= 0 || rl < after {
			after = rl
		}
	}
	prio := ptr.Deref(o.Priority, 0)
	var readyAt time.Time
	if after > 0 {
		readyAt = q.clock.Now().Add(after)
		q.metrics.retry()
	}
	it, queued := q.items[key]
	if !queued {
		it = &item[T]{key: key, lane: q.lane(key), priority: prio}
		q.items[key] = it
		if after > 0 {
			q.wait(it, readyAt)
		} else {
			q.makeReady(it)
		}
		return
	}
	switch it.state {
	case stateWaiting:
		it.priority = max(it.priority, prio)
		switch {
		case after <= 0:
			heap.Remove(&q.waiting, it.index)
			q.makeReady(it)
			q.poke()
		case readyAt.Before(it.readyAt):
			it.readyAt = readyAt
			heap.Fix(&q.waiting, it.index)
			q.poke()
		}
	case stateReady:
		if prio > it.priority {
			q.unlink(it)
			it.priority = prio
			q.link(it)
		}
	case stateParked:
		// Ready as soon as the key is Done; a later ready time changes nothing.
		it.priority = max(it.priority, prio)
	}
}

func (q *Queue[T]) wait(it *item[T], readyAt time.Time) {
	it.state, it.readyAt, it.seq = stateWaiting, readyAt, q.seq
	q.seq++
	heap.Push(&q.waiting, it)
	q.poke()
}

// makeReady puts a queued item among the ready ones, or parks it while its key is processed.
func (q *Queue[T]) makeReady(it *item[T]) {
	it.readyAt = time.Time{}
	if q.processing.Has(it.key) {
		it.state = stateParked
		return
	}
	it.state = stateReady
	q.link(it)
	q.metrics.add(it.key)
	q.cond.Signal()
}

// link appends a ready item to its lane at its priority; a lane new to the level joins the ring
// just before the lane served next, so it gets its turn after every lane already waiting.
func (q *Queue[T]) link(it *item[T]) {
	i := sort.Search(len(q.levels), func(i int) bool { return q.levels[i].priority <= it.priority })
	if i == len(q.levels) || q.levels[i].priority != it.priority {
		lv := &level[T]{priority: it.priority, lanes: map[string]*lane[T]{}, ring: list.New()}
		q.levels = slices.Insert(q.levels, i, lv)
	}
	lv := q.levels[i]
	ln := lv.lanes[it.lane]
	if ln == nil {
		ln = &lane[T]{items: list.New()}
		lv.lanes[it.lane] = ln
		if lv.next == nil {
			ln.elem = lv.ring.PushBack(ln)
			lv.next = ln.elem
		} else {
			ln.elem = lv.ring.InsertBefore(ln, lv.next)
		}
	}
	it.elem = ln.items.PushBack(it)
	lv.n++
	q.ready++
}

// unlink takes a ready item out of its level.
func (q *Queue[T]) unlink(it *item[T]) {
	i := sort.Search(len(q.levels), func(i int) bool { return q.levels[i].priority <= it.priority })
	lv := q.levels[i]
	ln := lv.lanes[it.lane]
	ln.items.Remove(it.elem)
	it.elem = nil
	if ln.items.Len() == 0 {
		if lv.next == ln.elem {
			lv.next = ln.elem.Next()
		}
		lv.ring.Remove(ln.elem)
		lv.next = cmp.Or(lv.next, lv.ring.Front())
		delete(lv.lanes, it.lane)
	}
	lv.n--
	q.ready--
	if lv.n == 0 {
		q.levels = slices.Delete(q.levels, i, i+1)
	}
}

// GetWithPriority blocks until an item is ready or the queue shuts down, and hands out the
// next item with the priority it was queued at. The caller must call Done with it.
func (q *Queue[T]) GetWithPriority() (T, int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for !q.shutdown && q.ready == 0 {
		q.cond.Wait()
	}
	if q.shutdown {
		var zero T
		return zero, 0, true
	}
	lv := q.levels[0]
	ln := lv.next.Value.(*lane[T])
	it := ln.items.Front().Value.(*item[T])
	// The lane after this one is served next, whatever happens to this lane.
	following := cmp.Or(lv.next.Next(), lv.ring.Front())
	q.unlink(it)
	if lv.n > 0 && lv.lanes[it.lane] != nil {
		lv.next = following
	}
	delete(q.items, it.key)
	q.processing.Insert(it.key)
	q.metrics.get(it.key)
	return it.key, it.priority, false
}

// Get is GetWithPriority without the priority.
func (q *Queue[T]) Get() (T, bool) {
	key, _, shutdown := q.GetWithPriority()
	return key, shutdown
}

// Done marks item as processed: queued again meanwhile, it becomes ready now.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.processing.Delete(item)
	q.metrics.done(item)
	if it, ok := q.items[item]; ok && it.state == stateParked {
		q.makeReady(it)
	}
	if q.shutdown && q.processing.Len() == 0 {
		q.cond.Broadcast() // ShutDownWithDrain waits for this
	}
}

// Forget clears the rate limiter's memory of item.
func (q *Queue[T]) Forget(item T) { q.rateLimiter.Forget(item) }

// NumRequeues is how often item was requeued through the rate limiter.
func (q *Queue[T]) NumRequeues(item T) int { return q.rateLimiter.NumRequeues(item) }

// Len is the number of items ready to be handed out (not those waiting or parked).
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready
}

// ShutDown stops the queue: every Get returns shutdown at once, and adds are ignored.
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutDown()
}

func (q *Queue[T]) shutDown() {
	if q.shutdown {
		return
	}
	q.shutdown = true
	close(q.done)
	q.cond.Broadcast()
}

// ShutDownWithDrain shuts the queue down, then waits until every item handed out is Done.
func (q *Queue[T]) ShutDownWithDrain() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutDown()
	for q.processing.Len() > 0 {
		q.cond.Wait()
	}
}

// ShuttingDown reports whether ShutDown was called.
func (q *Queue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutdown
}

// poke tells the timer goroutine to look at the waiting items again.
func (q *Queue[T]) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// moveWaiting makes waiting items ready when their time comes.
func (q *Queue[T]) moveWaiting() {
	for {
		q.mu.Lock()
		now := q.clock.Now()
		for q.waiting.Len() > 0 && !q.waiting[0].readyAt.After(now) {
			q.makeReady(heap.Pop(&q.waiting).(*item[T]))
		}
		var fire <-chan time.Time
		stop := func() {}
		if q.waiting.Len() > 0 {
			timer := q.clock.NewTimer(q.waiting[0].readyAt.Sub(now))
			fire, stop = timer.C(), func() { timer.Stop() }
		}
		q.mu.Unlock()
		select {
		case <-q.done:
			stop()
			return
		case <-q.wake:
		case <-fire:
		}
		stop()
	}
}

// waitHeap orders waiting items by ready time.
type waitHeap[T comparable] []*item[T]

func (h waitHeap[T]) Len() int { return len(h) }
func (h waitHeap[T]) Less(i, j int) bool {
	return cmp.Or(h[i].readyAt.Compare(h[j].readyAt), cmp.Compare(h[i].seq, h[j].seq)) < 0
}
func (h waitHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waitHeap[T]) Push(x any) {
	it := x.(*item[T])
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *waitHeap[T]) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}
