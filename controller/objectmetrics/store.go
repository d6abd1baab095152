package objectmetrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultLimit is the default of --per-object-metrics-limit: objects of one kind with series.
const DefaultLimit = 1000

// untrackedDesc describes the count of objects left without series by the limit; one series per
// kind (a constant label, so that every kind's collector can describe it).
func untrackedDesc(kind string) *prometheus.Desc {
	return prometheus.NewDesc("platform_operators_object_metrics_untracked_objects",
		"Objects of the kind that have no per-object series because --per-object-metrics-limit objects of the kind already have them.",
		nil, prometheus.Labels{"kind": kind})
}

// Store holds the values V of at most limit objects of one kind, by namespace and name. It is safe
// for concurrent use (reconcile workers write, the scrape reads).
type Store[V any] struct {
	kind  string
	limit int
	desc  *prometheus.Desc

	mu sync.Mutex
	// store: limit × (the value: a Collector's samples, about 400 bytes) bytes; paid by the tenants whose objects are
	// measured, bounded by limit.
	tracked map[types.NamespacedName]V
	// untracked are the objects seen while the store was full: names only, so a tenant's
	// thousands of objects cost a map entry each (their full objects are in the informer cache
	// anyway), and the count stays exact when one is deleted.
	// store: about 100 bytes per object of the kind past limit (a name only), as many as the
	// informer inventory holds; paid by the objects' writers (their object quota).
	untracked map[types.NamespacedName]struct{}
}

// NewStore returns a store for kind that keeps values for at most limit objects (0 or less: none).
func NewStore[V any](kind string, limit int) *Store[V] {
	return &Store[V]{kind: kind, limit: max(limit, 0), desc: untrackedDesc(kind),
		tracked: map[types.NamespacedName]V{}, untracked: map[types.NamespacedName]struct{}{}}
}

// Set records v for the object key and reports whether it has series: false when limit other
// objects already have them.
func (s *Store[V]) Set(key types.NamespacedName, v V) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tracked[key]; ok || len(s.tracked) < s.limit {
		s.tracked[key] = v
		delete(s.untracked, key)
		return true
	}
	s.untracked[key] = struct{}{}
	return false
}

// Delete forgets the object key (it was deleted): its series end at the next scrape.
func (s *Store[V]) Delete(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tracked, key)
	delete(s.untracked, key)
}

// Get returns the values recorded for key.
func (s *Store[V]) Get(key types.NamespacedName) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.tracked[key]
	return v, ok
}

// Len returns how many objects have series and how many do not.
func (s *Store[V]) Len() (tracked, untracked int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tracked), len(s.untracked)
}

// Entry is one tracked object and its values.
type Entry[V any] struct {
	Key    types.NamespacedName
	Values V
}

// Snapshot returns the tracked objects, sorted by namespace and name, copied out of the lock so a
// scrape does not hold up the reconcilers while it formats them.
func (s *Store[V]) Snapshot() []Entry[V] {
	s.mu.Lock()
	out := make([]Entry[V], 0, len(s.tracked))
	for k, v := range s.tracked {
		out = append(out, Entry[V]{k, v})
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key.Namespace != out[j].Key.Namespace {
			return out[i].Key.Namespace < out[j].Key.Namespace
		}
		return out[i].Key.Name < out[j].Key.Name
	})
	return out
}

// DescribeUntracked sends the description of the untracked-objects count, for a collector's
// Describe.
func (s *Store[V]) DescribeUntracked(ch chan<- *prometheus.Desc) { ch <- s.desc }

// CollectUntracked sends the untracked-objects count, for a collector's Collect.
func (s *Store[V]) CollectUntracked(ch chan<- prometheus.Metric) {
	_, n := s.Len()
	ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, float64(n))
}

// Sample is an object's value of one series of a Collector; Label is the value of the series'
// extra label, if it has one.
type Sample struct {
	V     float64
	OK    bool
	Label string
}

// Value is a sample every object has; Flag is 1 for true, else 0.
func Value(v float64) Sample { return Sample{V: v, OK: true} }

func Flag(b bool) Sample {
	if b {
		return Value(1)
	}
	return Value(0)
}

// IfSet is a sample only for a positive v.
func IfSet(v float64) Sample { return Sample{V: v, OK: v > 0} }

// Stamp is a time's sample (Unix seconds), none for a nil or zero time.
func Stamp(t *metav1.Time) Sample {
	if t == nil || t.IsZero() {
		return Sample{}
	}
	return Value(float64(t.UnixMilli()) / 1e3)
}

// Collector is a Store of each object's samples, one per series in the order of its Descs, that
// a scrape reads, with the untracked count.
type Collector struct {
	*Store[[]Sample]
	descs []*prometheus.Desc
}

// NewCollector creates the series of at most limit objects of kind (0: none), each labelled
// namespace and name (and extra, if its sample sets Label), and registers them with reg.
func NewCollector(reg prometheus.Registerer, kind string, limit int, descs ...*prometheus.Desc) (*Collector, error) {
	c := &Collector{Store: NewStore[[]Sample](kind, limit), descs: descs}
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return c, nil
}

// NewDesc is a series' description, labelled namespace, name and extra.
func NewDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append([]string{"namespace", "name"}, extra...), nil)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	c.DescribeUntracked(ch)
}

// Collect implements prometheus.Collector: the series of the objects as last reconciled.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.Snapshot() {
		for i, s := range e.Values {
			labels := []string{e.Key.Namespace, e.Key.Name}
			if s.Label != "" {
				labels = append(labels, s.Label)
			}
			if s.OK {
				ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.GaugeValue, s.V, labels...)
			}
		}
	}
	c.CollectUntracked(ch)
}
