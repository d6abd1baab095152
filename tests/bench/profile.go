package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

// profiler takes CPU profiles of kube-apiserver and of the manager over the scale benchmark's
// windows (-profile-dir): kube-apiserver's /debug/pprof/profile through the admin client (it
// serves it with --profiling, its default, to a client allowed the non-resource URL, as
// cluster-admin is), the manager's on its --pprof-bind-address, which the bench sets to a free
// loopback port when -profile-dir is given.
type profiler struct {
	e   *env
	dir string

	mu      sync.Mutex
	written []string
	failed  []string
}

// Bounds of a profile's length: kube-apiserver ends a non-long-running request after
// --request-timeout (60 s by default), so a profile stays under it.
const (
	minProfile = 2 * time.Second
	maxProfile = 50 * time.Second
)

// profileSeconds is the length of a profile over a window expected to last d: d rounded up to
// whole seconds, within [minProfile, maxProfile].
func profileSeconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	return min(max(s, int(minProfile/time.Second)), int(maxProfile/time.Second))
}

// estimateFloor is the expected length of the floor's new-source window at n namespaces when
// nothing was measured at n yet: the previous step's scaled to n, else 2 ms a namespace (the
// floor took 1.4–1.9 ms a namespace on this 2-core machine on 2026-11-25).
func estimateFloor(n int, prev *scalePoint) time.Duration {
	if prev != nil && prev.floorCreate > 0 && prev.namespaces > 0 {
		return time.Duration(float64(prev.floorCreate) * float64(n) / float64(prev.namespaces))
	}
	return time.Duration(n) * 2 * time.Millisecond
}

// start begins profiles of kube-apiserver and, if it serves pprof, the manager, both for the
// length profileSeconds(expected), written to dir/<namespaces>-<window>-<apiserver|manager>.pprof.
// It returns once both requests are on their way; the returned function waits until both are
// written. A failed profile is logged and counted, not fatal: the measurement goes on.
func (p *profiler) start(ctx context.Context, namespaces int, window string, expected time.Duration) (wait func()) {
	secs := profileSeconds(expected)
	logf("profiling kube-apiserver and the manager for %d s (%s window at %d namespaces)", secs, window, namespaces)
	var wg sync.WaitGroup
	run := func(who string, get func() ([]byte, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := filepath.Join(p.dir, fmt.Sprintf("%d-%s-%s.pprof", namespaces, window, who))
			b, err := get()
			if err == nil {
				err = os.WriteFile(path, b, 0o644)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				logf("profile %s: %v", path, err)
				p.failed = append(p.failed, filepath.Base(path))
				return
			}
			p.written = append(p.written, filepath.Base(path))
		}()
	}
	run("apiserver", func() ([]byte, error) {
		return p.e.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(secs)).DoRaw(ctx)
	})
	if addr := p.e.manager.PprofAddr; addr != "" {
		run("manager", func() ([]byte, error) {
			b, err := testbed.HTTPGet(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs))
			return []byte(b), err
		})
	}
	// Both servers start their profile when the request arrives: leave them a moment, so the
	// window's first write falls inside.
	time.Sleep(200 * time.Millisecond)
	return wg.Wait
}

// summary says what was written and what failed, for the report.
func (p *profiler) summary() (written, failed []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.written...), append([]string(nil), p.failed...)
}

// heapProfile writes the manager's heap profile (/debug/pprof/heap, after a forced collection:
// gc=1, so inuse_space is the live heap) to dir/name, and its goroutines beside it
// (<name without .heap.pprof>.goroutines.txt), when the manager serves pprof (-profile-dir).
// It returns the file's name, or "" when the manager serves no pprof.
func heapProfile(ctx context.Context, e *env, name string) (string, error) {
	if e.manager == nil || e.manager.PprofAddr == "" || e.profileDir == "" {
		return "", nil
	}
	b, err := testbed.HTTPGet(ctx, fmt.Sprintf("http://%s/debug/pprof/heap?gc=1", e.manager.PprofAddr))
	if err != nil {
		return "", err
	}
	path := filepath.Join(e.profileDir, name)
	if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
		return "", err
	}
	// Beside it, every goroutine with its stack and how long it has waited (debug=2): which
	// watches are open, and since when, says whose buffers the heap profile shows.
	g, err := testbed.HTTPGet(ctx, fmt.Sprintf("http://%s/debug/pprof/goroutine?debug=2", e.manager.PprofAddr))
	if err != nil {
		return path, err
	}
	return path, os.WriteFile(strings.TrimSuffix(path, ".heap.pprof")+".goroutines.txt", []byte(g), 0o644)
}
