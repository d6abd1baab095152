package fairqueue

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// queueMetrics records what client-go's and controller-runtime's queues record: depth (ready
// items), adds, time queued, time processed, unfinished work and retries. A nil *queueMetrics
// records nothing. Every method but updateUnfinishedWork is called with the queue's lock held.
type queueMetrics[T comparable] struct {
	clock                   clock.Clock
	depth                   workqueue.GaugeMetric
	adds                    workqueue.CounterMetric
	latency                 workqueue.HistogramMetric
	workDuration            workqueue.HistogramMetric
	unfinishedWorkSeconds   workqueue.SettableGaugeMetric
	longestRunningProcessor workqueue.SettableGaugeMetric
	retries                 workqueue.CounterMetric
	// store: about 100 bytes per queued item, one per object the controller watches (the items
	// map's bound); paid by the objects' writers, within the informer inventory.
	addTimes map[T]time.Time
	// store: about 100 bytes per item a worker holds, at most the workers; paid by nobody outside.
	processingStartTimes map[T]time.Time
}

func newQueueMetrics[T comparable](p workqueue.MetricsProvider, name string, c clock.Clock) *queueMetrics[T] {
	if p == nil || name == "" {
		return nil
	}
	return &queueMetrics[T]{
		clock:                   c,
		depth:                   p.NewDepthMetric(name),
		adds:                    p.NewAddsMetric(name),
		latency:                 p.NewLatencyMetric(name),
		workDuration:            p.NewWorkDurationMetric(name),
		unfinishedWorkSeconds:   p.NewUnfinishedWorkSecondsMetric(name),
		longestRunningProcessor: p.NewLongestRunningProcessorSecondsMetric(name),
		retries:                 p.NewRetriesMetric(name),
		addTimes:                map[T]time.Time{},
		processingStartTimes:    map[T]time.Time{},
	}
}

// add: an item became ready.
func (m *queueMetrics[T]) add(key T) {
	if m == nil {
		return
	}
	m.adds.Inc()
	m.depth.Inc()
	if _, ok := m.addTimes[key]; !ok {
		m.addTimes[key] = m.clock.Now()
	}
}

// get: an item was handed out.
func (m *queueMetrics[T]) get(key T) {
	if m == nil {
		return
	}
	m.depth.Dec()
	now := m.clock.Now()
	m.processingStartTimes[key] = now
	if t, ok := m.addTimes[key]; ok {
		m.latency.Observe(now.Sub(t).Seconds())
		delete(m.addTimes, key)
	}
}

// done: an item was processed.
func (m *queueMetrics[T]) done(key T) {
	if m == nil {
		return
	}
	if t, ok := m.processingStartTimes[key]; ok {
		m.workDuration.Observe(m.clock.Since(t).Seconds())
		delete(m.processingStartTimes, key)
	}
}

// retry: an item was queued to wait (AddAfter, a rate limit).
func (m *queueMetrics[T]) retry() {
	if m != nil {
		m.retries.Inc()
	}
}

// updateUnfinishedWork sets the unfinished-work gauges every half second (as client-go's
// queue does) until the queue shuts down.
func (q *Queue[T]) updateUnfinishedWork() {
	t := q.clock.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-q.done:
			return
		case <-t.C():
		}
		q.mu.Lock()
		m := q.metrics
		var total, oldest float64
		for _, start := range m.processingStartTimes {
			age := m.clock.Since(start).Seconds()
			total += age
			oldest = max(oldest, age)
		}
		q.mu.Unlock()
		m.unfinishedWorkSeconds.Set(total)
		m.longestRunningProcessor.Set(oldest)
	}
}
