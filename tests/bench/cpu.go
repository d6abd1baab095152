package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuSample is the machine's CPU time split (from /proc/stat) and the CPU time of each process
// command name (from /proc/<pid>/stat), in clock ticks.
type cpuSample struct {
	busy, iowait, total uint64
	byComm              map[string]uint64
}

func sampleCPU() cpuSample {
	s := cpuSample{byComm: map[string]uint64{}}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
		for i := 1; i < len(f) && i <= 8; i++ {
			v, _ := strconv.ParseUint(f[i], 10, 64)
			s.total += v
			switch i {
			case 4:
			case 5:
				s.iowait += v
			default:
				s.busy += v
			}
		}
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15): comm may hold spaces, so cut at the last ')'.
		open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(b)[end+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		s.byComm[string(b)[open+1:end]] += u + st
	}
	return s
}

// cpuSummary says how busy the machine was between two samples and which processes used it:
// "busy 1.9 of 2 cores, iowait 0.0; kube-apiserver 1.2, etcd 0.3, ...". Processes that exited
// in between are left out.
func cpuSummary(a, b cpuSample, cores int) string {
	total := float64(b.total - a.total)
	if total == 0 {
		return "no sample"
	}
	share := func(ticks uint64) float64 { return float64(ticks) / total * float64(cores) }
	type proc struct {
		name  string
		ticks uint64
	}
	var ps []proc
	for name, t := range b.byComm {
		if t0, ok := a.byComm[name]; ok && t > t0 {
			ps = append(ps, proc{name, t - t0})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].ticks > ps[j].ticks })
	parts := []string{fmt.Sprintf("busy %.1f of %d cores, iowait %.1f", share(b.busy-a.busy), cores, share(b.iowait-a.iowait))}
	for i, p := range ps {
		if i == 6 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", p.name, share(p.ticks)))
	}
	return strings.Join(parts, ", ")
}

// slotWindow is how long after a slot its CPU use is summed.
const slotWindow = 3 * time.Second

// watchSlotsCPU samples the machine at each slot from first to last and slotWindow later, in the
// background; the returned function waits for it and returns the summaries by slot.
func watchSlotsCPU(ctx context.Context, first, last time.Time) func() map[time.Time]string {
	var mu sync.Mutex
	out := map[time.Time]string{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for s := first; !s.After(last); s = s.Add(time.Minute) {
			if !sleepUntil(ctx, s) {
				return
			}
			a := sampleCPU()
			if !sleepUntil(ctx, s.Add(slotWindow)) {
				return
			}
			b := sampleCPU()
			mu.Lock()
			out[s] = cpuSummary(a, b, runtime.NumCPU())
			mu.Unlock()
		}
	}()
	return func() map[time.Time]string {
		wg.Wait()
		return out
	}
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-time.After(time.Until(t)):
		return true
	case <-ctx.Done():
		return false
	}
}
