package cachebounds

import "github.com/prometheus/client_golang/prometheus"

// collector exposes, at each scrape, how often the watches of this process's caches were
// renewed after a heavy event (by cache and type: a tenant's large objects show up there) and
// how often memory was handed back after them.
type collector struct{ renewals, returns *prometheus.Desc }

// NewCollector returns the collector of the caches' renewals and memory returns:
// platform_operators_cache_watch_renewals_total{cache,type} and
// platform_operators_cache_memory_returns_total.
func NewCollector() prometheus.Collector {
	return collector{
		renewals: prometheus.NewDesc("platform_operators_cache_watch_renewals_total",
			"Watches of the manager's caches renewed right after an event over 64 KiB, so that their decode buffers do not outlive it (controller/cachebounds).",
			[]string{"cache", "type"}, nil),
		returns: prometheus.NewDesc("platform_operators_cache_memory_returns_total",
			"Times the manager handed memory back to the system once heavy watch events had stopped (controller/cachebounds).",
			nil, nil),
	}
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.renewals
	ch <- c.returns
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	type key struct{ cache, typ string }
	sums := map[key]int64{}
	for _, i := range Built() {
		if i.Renewed != nil {
			sums[key{i.Cache, i.Type}] += i.Renewed.Load()
		}
	}
	for k, v := range sums {
		ch <- prometheus.MustNewConstMetric(c.renewals, prometheus.CounterValue, float64(v), k.cache, k.typ)
	}
	ch <- prometheus.MustNewConstMetric(c.returns, prometheus.CounterValue, float64(MemoryReturns()))
}
