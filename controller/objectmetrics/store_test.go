package objectmetrics

import (
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
)

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// counts are how many objects s keeps values for and how many it only counts.
func (s *Store[V]) counts() (tracked, untracked int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tracked), len(s.untracked)
}

func TestAFullStoreCountsTheObjectsItLeavesWithoutSeries(t *testing.T) {
	s := NewStore[int]("ScheduledJob", 2)
	for i, k := range []types.NamespacedName{key("a", "1"), key("a", "2"), key("b", "1"), key("b", "2")} {
		if got, want := s.Set(k, i), i < 2; got != want {
			t.Errorf("Set(%v) = %v, want %v", k, got, want)
		}
	}
	if tr, un := s.counts(); tr != 2 || un != 2 {
		t.Fatalf("tracked %d, untracked %d; want 2, 2", tr, un)
	}
	// A tracked object's values are updated in place, however full the store is.
	if !s.Set(key("a", "1"), 10) {
		t.Error("updating a tracked object was refused")
	}
	if v := s.tracked[key("a", "1")]; v != 10 {
		t.Errorf("value %d, want 10", v)
	}
	// Setting an untracked object again does not count it twice.
	s.Set(key("b", "1"), 5)
	if _, un := s.counts(); un != 2 {
		t.Errorf("untracked %d after a second Set, want 2", un)
	}
	// Deleting an untracked object lowers the count; deleting a tracked one frees a place that
	// the next Set of an untracked object takes.
	s.Delete(key("b", "2"))
	s.Delete(key("a", "2"))
	if tr, un := s.counts(); tr != 1 || un != 1 {
		t.Fatalf("after deletes: tracked %d, untracked %d; want 1, 1", tr, un)
	}
	if !s.Set(key("b", "1"), 6) {
		t.Error("an untracked object did not take the freed place")
	}
	if tr, un := s.counts(); tr != 2 || un != 0 {
		t.Errorf("tracked %d, untracked %d; want 2, 0", tr, un)
	}
	if fmt.Sprint(s.tracked) != "map[a/1:10 b/1:6]" {
		t.Errorf("values %v, want a/1:10 b/1:6", s.tracked)
	}
}

func TestALimitOfZeroKeepsNoValues(t *testing.T) {
	s := NewStore[int]("At", 0)
	if s.Set(key("a", "1"), 1) {
		t.Error("Set with limit 0 reported series")
	}
	if tr, un := s.counts(); tr != 0 || un != 1 {
		t.Errorf("tracked %d, untracked %d; want 0, 1", tr, un)
	}
}

// A tenant creating 100,000 objects: the store keeps values for the limit's number, and a
// scrape yields the limit's number of entries and one count.
func TestTheLimitHoldsAgainstManyObjects(t *testing.T) {
	const limit, objects = 1000, 100_000
	c := &Collector{Store: NewStore[[]Sample]("ScheduledJob", limit)}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < objects; i += 8 {
				c.Set(key("tenant", fmt.Sprintf("sj-%06d", i)), nil)
			}
		}()
	}
	wg.Wait()
	if tr, un := c.counts(); tr != limit || un != objects-limit {
		t.Fatalf("tracked %d, untracked %d; want %d, %d", tr, un, limit, objects-limit)
	}
	if n := testutil.CollectAndCount(c, "platform_operators_object_metrics_untracked_objects"); n != 1 {
		t.Errorf("%d untracked series, want 1", n)
	}
	if v := testutil.ToFloat64(c); v != objects-limit {
		t.Errorf("untracked objects = %v, want %d", v, objects-limit)
	}
}
