package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseManagerMemory(t *testing.T) {
	const base = "# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.\n" +
		"# TYPE go_memstats_heap_inuse_bytes gauge\ngo_memstats_heap_inuse_bytes 4.194304e+07\n" +
		"controller_runtime_reconcile_total{controller=\"secretsync\",result=\"success\"} 3\n"
	for _, tc := range []struct {
		name    string
		metrics string
		want    managerMemory
		err     bool
	}{
		{"all three, a limit set", base + "go_gc_heap_live_bytes 2.097152e+07\ngo_gc_gomemlimit_bytes 2.4159191e+08\n", managerMemory{heapInuseMiB: 40, heapLiveMiB: 20, goMemLimit: 241591910}, false},
		{"no limit: math.MaxInt64", base + "go_gc_heap_live_bytes 0\ngo_gc_gomemlimit_bytes 9.223372036854776e+18\n", managerMemory{heapInuseMiB: 40, heapLiveMiB: 0, goMemLimit: 0}, false},
		{"live heap and limit not exposed", base, managerMemory{heapInuseMiB: 40, heapLiveMiB: -1, goMemLimit: -1}, false},
		{"no heap in use", "go_gc_heap_live_bytes 1\n", managerMemory{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseManagerMemory(tc.metrics)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error: %v", err, tc.err)
			}
			if !tc.err && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestProfileLength(t *testing.T) {
	for _, tc := range []struct {
		expected time.Duration
		want     int
	}{
		{0, 2},
		{1500 * time.Millisecond, 2},
		{2 * time.Second, 2},
		{2001 * time.Millisecond, 3},
		{16060 * time.Millisecond, 17},
		{10 * time.Minute, 50},
	} {
		if got := profileSeconds(tc.expected); got != tc.want {
			t.Errorf("profileSeconds(%s) = %d, want %d", tc.expected, got, tc.want)
		}
	}
	if got := estimateFloor(1000, nil); got != 2*time.Second {
		t.Errorf("first step's estimate %s, want 2 ms a namespace", got)
	}
	if got := estimateFloor(3000, &scalePoint{namespaces: 1000, floorCreate: 1500 * time.Millisecond}); got != 4500*time.Millisecond {
		t.Errorf("estimate after a step %s, want the step's floor scaled", got)
	}
}

func TestMemoryLimitSentence(t *testing.T) {
	for _, tc := range []struct {
		res  scaleResult
		want []string
	}{
		{scaleResult{memoryLimit: "chart", limit: 256 << 20, goMemLimit: 241591910},
			[]string{"limited to 256.0 MiB", "GOMEMLIMIT) to 230.4 MiB, 90% of that", "`go_gc_gomemlimit_bytes`"}},
		{scaleResult{memoryLimit: "chart", goMemLimit: 0}, []string{"set no memory limit", "set no Go memory limit"}},
		{scaleResult{memoryLimit: "off", goMemLimit: 0}, []string{"`-memory-limit=off`", "set no Go memory limit"}},
		{scaleResult{memoryLimit: "off", goMemLimit: -1}, []string{"was not read"}},
	} {
		got := memoryLimitSentence(&tc.res)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%+v: %q does not say %q", tc.res, got, w)
			}
		}
	}
}
