package cachebounds

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func TestReturnDue(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	s := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	const quiet, gap = 5 * time.Second, 30 * time.Second
	for _, c := range []struct {
		name         string
		now, last    time.Time
		pendingSince time.Time
		pending      bool
		want         time.Time
	}{
		{"the first heavy event: returned once the events have stopped for the quiet time", s(0), time.Time{}, time.Time{}, false, s(5)},
		{"another one pushes it on", s(3), time.Time{}, s(0), true, s(8)},
		{"not sooner than the gap after the last return", s(40), s(20), time.Time{}, false, s(50)},
		{"long after the last return: the quiet time only", s(100), s(20), time.Time{}, false, s(105)},
		{"a flood that never pauses still returns once per gap", s(29), time.Time{}, s(0), true, s(30)},
		{"and goes on doing so after a return", s(58), s(30), s(31), true, s(61)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := returnDue(c.now, c.last, c.pendingSince, c.pending, quiet, gap); !got.Equal(c.want) {
				t.Errorf("due %s, want %s", got.Sub(t0), c.want.Sub(t0))
			}
		})
	}
}

// The returner frees once for a burst of heavy events, after they stop.
func TestMemoryIsReturnedOnceAfterABurst(t *testing.T) {
	freed := make(chan time.Time, 10)
	r := &memoryReturner{quiet: 50 * time.Millisecond, gap: time.Hour, now: time.Now, free: func() { freed <- time.Now() }}
	start := time.Now()
	for range 5 {
		r.heavy()
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case at := <-freed:
		if at.Sub(start) < 90*time.Millisecond {
			t.Errorf("freed %s after the burst began, before the events had stopped for the quiet time", at.Sub(start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("memory was not handed back after the burst")
	}
	r.heavy() // within the gap: not before an hour
	select {
	case <-freed:
		t.Error("freed again within the gap")
	case <-time.After(200 * time.Millisecond):
	}
}

func TestTheCollectorCountsRenewalsAndReturns(t *testing.T) {
	renewed := new(atomic.Int64)
	renewed.Add(3)
	record(Informer{Cache: "collector-test", Type: "*v1.ConfigMap", Declared: true, Renewed: renewed})
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector())
	got, err := testutil.GatherAndCount(reg, "platform_operators_cache_watch_renewals_total", "platform_operators_cache_memory_returns_total")
	if err != nil || got < 2 {
		t.Fatalf("gathered %d series (%v), want the renewals of the informer and the returns", got, err)
	}
	want := strings.NewReader(`# HELP platform_operators_cache_watch_renewals_total Watches of the manager's caches renewed right after an event over 64 KiB, so that their decode buffers do not outlive it (controller/cachebounds).
# TYPE platform_operators_cache_watch_renewals_total counter
platform_operators_cache_watch_renewals_total{cache="collector-test",type="*v1.ConfigMap"} 3
`)
	if err := testutil.GatherAndCompare(onlyCache(reg, "collector-test"), want, "platform_operators_cache_watch_renewals_total"); err != nil {
		t.Error(err)
	}
}

// onlyCache keeps the series of one cache (other tests of the package record informers too).
func onlyCache(g prometheus.Gatherer, cache string) prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		for _, mf := range mfs {
			var keep []*dto.Metric
			for _, m := range mf.Metric {
				for _, l := range m.Label {
					if l.GetName() == "cache" && l.GetValue() == cache {
						keep = append(keep, m)
					}
				}
			}
			mf.Metric = keep
		}
		return mfs, err
	})
}
