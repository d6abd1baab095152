package testbed

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestCPUSharesAndWeightAreTheKubelets checks the conversions against values worked out by hand
// from the kubelet's formulas (helpers_linux.go MilliCPUToShares, cgroup_manager_linux.go
// getCPUWeight at v1.36.3).
func TestCPUSharesAndWeightAreTheKubelets(t *testing.T) {
	for _, tc := range []struct {
		name           string
		milli          int64
		shares, weight uint64
	}{
		{"no request gets the minimum", 0, 2, 1},
		{"1m rounds down to the minimum", 1, 2, 1},
		{"10m, the chart's old default", 10, 10, 1},
		{"50m", 50, 51, 2},
		{"100m", 100, 102, 4},
		{"200m", 200, 204, 8},
		{"250m, a control-plane pod's usual request", 250, 256, 10},
		{"one CPU", 1000, 1024, 39},
		{"beyond the kernel's maximum is clamped", 300000, 262144, 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CPUShares(tc.milli); got != tc.shares {
				t.Errorf("CPUShares(%d) = %d, want %d", tc.milli, got, tc.shares)
			}
			if got := CPUWeight(CPUShares(tc.milli)); got != tc.weight {
				t.Errorf("CPUWeight(%d) = %d, want %d", CPUShares(tc.milli), got, tc.weight)
			}
		})
	}
}

func TestCgroupDirFindsTheCPUHierarchy(t *testing.T) {
	const hybridCgroup = "4:memory:/process_api/920418\n2:cpuacct:/\n1:cpu:/a\n0::/\n"
	const hybridMounts = "31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n" +
		"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	dir, version, err := cgroupDir("cpu", hybridCgroup, hybridMounts)
	if err != nil || dir != "/sys/fs/cgroup/cpu/a" || version != 1 {
		t.Fatalf("got %q v%d (%v), want /sys/fs/cgroup/cpu/a v1 (not cpuacct's hierarchy)", dir, version, err)
	}
	dir, version, err = cgroupDir("cpu", "0::/x\n", "30 22 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	if err != nil || dir != "/sys/fs/cgroup/x" || version != 2 {
		t.Fatalf("v2: got %q v%d (%v)", dir, version, err)
	}
}

// TestCPUCgroupRunsACommandInItWithItsWeight makes a CPU cgroup where this machine lets the test
// make one (it skips where not): the weight is the kubelet's, a resize rewrites it, a command
// joins it and a memory cgroup at once, and Remove leaves nothing behind.
func TestCPUCgroupRunsACommandInItWithItsWeight(t *testing.T) {
	c, err := NewCPUCgroup("testbed-test", 10)
	if err != nil {
		t.Skipf("no writable cpu cgroup here: %v", err)
	}
	t.Cleanup(func() { _ = c.Remove(5 * time.Second) })
	want := map[int]uint64{1: 10, 2: 1}[c.Version]
	if w, err := c.Weight(); err != nil || w != want {
		t.Fatalf("weight %d (%v), want %d", w, err, want)
	}
	if err := c.SetRequest(200); err != nil {
		t.Fatal(err)
	}
	want = map[int]uint64{1: 204, 2: 8}[c.Version]
	if w, err := c.Weight(); err != nil || w != want || c.MilliCPU != 200 {
		t.Fatalf("after a resize to 200m: weight %d (%v), request %d, want %d", w, err, c.MilliCPU, want)
	}
	if err := c.SetLimit(500); err != nil {
		t.Fatal(err)
	}
	if c.Version == 1 {
		if b, _ := os.ReadFile(filepath.Join(c.Dir, "cpu.cfs_quota_us")); strings.TrimSpace(string(b)) != "50000" {
			t.Errorf("quota %q, want 50000", b)
		}
	}
	dirs := []string{c.Dir}
	m, err := NewMemoryCgroup("testbed-test", 256<<20)
	if err == nil {
		t.Cleanup(func() { _ = m.Remove(5 * time.Second) })
		dirs = append(dirs, m.Dir)
	}
	cmd := JoinCommand(dirs, "/bin/sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	var comm []byte
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		comm, _ = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		return strings.TrimSpace(string(comm)) == "sleep", nil
	}); err != nil {
		t.Fatalf("pid %d is %q, not sleep: the shell did not exec it", pid, comm)
	}
	if !c.Holds(pid) {
		t.Errorf("pid %d is not in %s", pid, c.Dir)
	}
	if m != nil && !m.Holds(pid) {
		t.Errorf("pid %d is not in %s", pid, m.Dir)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err := c.Remove(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", c.Dir, err)
	}
}

// TestJoinCommandFailsWhenItCannotJoin: a cgroup that does not exist stops the command before
// the binary runs.
func TestJoinCommandFailsWhenItCannotJoin(t *testing.T) {
	out, err := JoinCommand([]string{filepath.Join(t.TempDir(), "missing")}, "/bin/echo", "ran").CombinedOutput()
	if err == nil || strings.Contains(string(out), "ran") {
		t.Fatalf("the command ran (%q, %v)", out, err)
	}
}
