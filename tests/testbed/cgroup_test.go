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

func TestMemoryCgroupDir(t *testing.T) {
	const hybridCgroup = "9:name=systemd:/\n4:memory:/process_api/920418\n1:cpu:/\n0::/\n"
	const hybridMounts = "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
		"31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	const v2Mounts = "30 22 0:27 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	for _, tc := range []struct {
		name, cgroup, mounts string
		dir                  string
		version              int
		err                  string
	}{
		{"hybrid: the memory controller is on v1", hybridCgroup, hybridMounts, "/sys/fs/cgroup/memory/process_api/920418", 1, ""},
		{"v1 with memory and cpu on one hierarchy", "3:cpu,memory:/a/b\n", "34 30 0:31 / /sys/fs/cgroup/cpu,memory rw - cgroup cgroup rw,cpu,memory\n", "/sys/fs/cgroup/cpu,memory/a/b", 1, ""},
		{"v2 only", "0::/user.slice/session-1.scope\n", v2Mounts, "/sys/fs/cgroup/user.slice/session-1.scope", 2, ""},
		{"v2 in a cgroup namespace's mount", "0::/pod/c1\n", "30 22 0:27 /pod /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup/c1", 2, ""},
		{"v2 outside the mounted part", "0::/other\n", "30 22 0:27 /pod /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", "", 0, "outside the mounted part"},
		{"v1 memory hierarchy not mounted", "4:memory:/x\n", "31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", "", 0, "no cgroup filesystem with the memory controller"},
		{"no cgroup at all", "", "", "", 0, "no cgroup with a memory controller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, version, err := memoryCgroupDir(tc.cgroup, tc.mounts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || dir != tc.dir || version != tc.version {
				t.Fatalf("got %q v%d (%v), want %q v%d", dir, version, err, tc.dir, tc.version)
			}
		})
	}
}

// TestMemoryCgroupRunsACommandInIt runs a command in a fresh memory cgroup where this machine
// lets the test make one (it skips where not): the command is in the cgroup under the shell's
// pid, the limit is set, and Remove leaves nothing behind.
func TestMemoryCgroupRunsACommandInIt(t *testing.T) {
	const limit = 256 << 20
	c, err := NewMemoryCgroup("testbed-test", limit)
	if err != nil {
		t.Skipf("no writable memory cgroup here: %v", err)
	}
	t.Cleanup(func() { _ = c.Remove(5 * time.Second) })
	file := map[int]string{1: "memory.limit_in_bytes", 2: "memory.max"}[c.Version]
	if b, err := os.ReadFile(filepath.Join(c.Dir, file)); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(limit) {
		t.Fatalf("%s holds %q (%v), want %d", file, b, err, limit)
	}
	cmd := c.Command("/bin/sleep", "30")
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
	if err := c.Remove(0); err == nil {
		t.Errorf("a cgroup with a process in it was removed")
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
