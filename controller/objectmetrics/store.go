package objectmetrics

import (
	"maps"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultLimit is the default of --per-object-metrics-limit: objects of one kind with series.
const DefaultLimit = 1000

// Store holds the values V of at most limit objects of one kind, by namespace and name. It is safe
// for concurrent use (reconcile workers write, the scrape reads).
type Store[V any] struct {
	kind  string
	limit int
	// desc describes the count of objects left without series by the limit; one series per kind
	// (a constant label, so that every kind's collector can describe it).
	desc *prometheus.Desc

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
	return &Store[V]{kind: kind, limit: max(limit, 0), desc: prometheus.NewDesc("platform_operators_object_metrics_untracked_objects",
		"Objects of the kind that have no per-object series because --per-object-metrics-limit objects of the kind already have them.",
		nil, prometheus.Labels{"kind": kind}),
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
	ch <- c.desc
}

// Collect implements prometheus.Collector: the series of the objects as last reconciled, and the
// untracked-objects count. The samples are copied out of the lock, so a scrape does not hold up
// the reconcilers while it formats them.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	tracked, untracked := maps.Clone(c.tracked), len(c.untracked)
	c.mu.Unlock()
	for key, samples := range tracked {
		for i, s := range samples {
			labels := []string{key.Namespace, key.Name}
			if s.Label != "" {
				labels = append(labels, s.Label)
			}
			if s.OK {
				ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.GaugeValue, s.V, labels...)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(untracked))
}
