package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// MemoryCgroup is a memory cgroup made for one process, as the kubelet makes one for a container
// with resources.limits.memory: a host process started in it (Command) finds the limit where a
// containerised one would, in its own cgroup (/proc/self/cgroup).
type MemoryCgroup struct {
	// Dir is the cgroup's directory.
	Dir string
	// Version is the cgroup version: 1 (memory.limit_in_bytes) or 2 (memory.max).
	Version int
	// Limit is the memory limit in bytes.
	Limit int64
}

var cgroupSeq atomic.Int64

// NewMemoryCgroup creates a child of the calling process's memory cgroup, named
// prefix-<pid>-<n>, limited to limit bytes: with cgroup v1 (the memory controller on a v1
// hierarchy, as on hybrid hosts) through memory.limit_in_bytes, with v2 through memory.max, which
// exists only where the memory controller is enabled for the calling process's cgroup's children
// (it is not enabled here). The error says why when no writable memory cgroup is found.
func NewMemoryCgroup(prefix string, limit int64) (*MemoryCgroup, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("memory cgroup: limit %d is not positive", limit)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("memory cgroup: %w", err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("memory cgroup: %w", err)
	}
	parent, version, err := memoryCgroupDir(string(self), string(mounts))
	if err != nil {
		return nil, err
	}
	c := &MemoryCgroup{Dir: filepath.Join(parent, fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), cgroupSeq.Add(1))), Version: version, Limit: limit}
	if err := os.Mkdir(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory cgroup v%d: creating a child of %s: %w", version, parent, err)
	}
	file := "memory.limit_in_bytes"
	if version == 2 {
		file = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(c.Dir, file), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		_ = os.Remove(c.Dir)
		if version == 2 && errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("memory cgroup v2: the memory controller is not enabled for the children of %s (its cgroup.subtree_control)", parent)
		}
		return nil, fmt.Errorf("memory cgroup v%d: setting %s: %w", version, file, err)
	}
	return c, nil
}

// Command returns a command running binary with args inside the cgroup from its first
// instruction: a shell writes its own pid into the cgroup, then execs binary, which keeps the
// shell's pid (so Process.Pid, signals and Wait refer to binary) and its stdout and stderr. If the
// shell cannot join the cgroup it exits with status 1 and says why on stderr, and binary never
// starts.
func (c *MemoryCgroup) Command(binary string, args ...string) *exec.Cmd {
	return JoinCommand([]string{c.Dir}, binary, args...)
}

// JoinCommand returns a command running binary with args inside every cgroup of dirs (a memory
// and a CPU cgroup, which are different hierarchies on cgroup v1) from its first instruction: a
// shell writes its own pid into each cgroup.procs, then execs binary, which keeps the shell's pid
// and its stdout and stderr. If the shell cannot join a cgroup it exits with status 1 and says
// why on stderr, and binary never starts.
func JoinCommand(dirs []string, binary string, args ...string) *exec.Cmd {
	// The procs files are the script's positional parameters before "--", binary and args what
	// follows: nothing is quoted.
	const script = `while [ "$1" != -- ]; do echo $$ > "$1" || exit 1; shift; done; shift; exec "$@"`
	argv := []string{"-c", script, "sh"}
	for _, d := range dirs {
		argv = append(argv, filepath.Join(d, "cgroup.procs"))
	}
	return exec.Command("/bin/sh", append(append(argv, "--", binary), args...)...)
}

// Holds reports whether pid is a member of the cgroup.
func (c *MemoryCgroup) Holds(pid int) bool { return cgroupHolds(c.Dir, pid) }

// Remove deletes the cgroup, waiting up to timeout for its processes to be gone (a cgroup with
// members cannot be removed). A cgroup already gone is fine.
func (c *MemoryCgroup) Remove(timeout time.Duration) error {
	return removeCgroup("memory", c.Dir, timeout)
}

// cgroupHolds reports whether pid is a member of the cgroup at dir (either hierarchy).
func cgroupHolds(dir string, pid int) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	return slices.Contains(strings.Fields(string(b)), strconv.Itoa(pid))
}

// removeCgroup deletes the cgroup at dir (a kind one: memory, cpu), waiting up to timeout for its
// processes to be gone. A cgroup already gone is fine.
func removeCgroup(kind, dir string, timeout time.Duration) error {
	var err error
	if wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		err = os.Remove(dir)
		return err == nil || errors.Is(err, os.ErrNotExist), nil
	}) == nil {
		return nil
	}
	procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return fmt.Errorf("removing %s cgroup %s (processes %q): %w", kind, dir, strings.Fields(string(procs)), err)
}

// memoryCgroupDir finds the directory of the memory cgroup a process is in from its
// /proc/<pid>/cgroup and /proc/<pid>/mountinfo (cgroupDir for the memory controller).
func memoryCgroupDir(procCgroup, mountinfo string) (dir string, version int, err error) {
	return cgroupDir("memory", procCgroup, mountinfo)
}

// cgroupDir finds the directory of the cgroup of controller (memory, cpu) a process is in from
// its /proc/<pid>/cgroup and /proc/<pid>/mountinfo: the v1 hierarchy holding the controller if
// there is one (a controller can be on one hierarchy only), else the v2 hierarchy.
func cgroupDir(controller, procCgroup, mountinfo string) (dir string, version int, err error) {
	var v1Path, v2Path string
	hasV1, hasV2 := false, false
	for _, line := range strings.Split(procCgroup, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			v2Path, hasV2 = f[2], true
		case slices.Contains(strings.Split(f[1], ","), controller):
			v1Path, hasV1 = f[2], true
		}
	}
	type mount struct{ root, point, fstype, options string }
	var mounts []mount
	for _, line := range strings.Split(mountinfo, "\n") {
		// id parent major:minor root mountpoint options [optional fields...] - fstype source superoptions
		before, after, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(before), strings.Fields(after)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		mounts = append(mounts, mount{root: unescapeMount(a[3]), point: unescapeMount(a[4]), fstype: b[0], options: b[2]})
	}
	resolve := func(m mount, path string) (string, error) {
		if m.root == "/" {
			return filepath.Join(m.point, path), nil
		}
		if rel, ok := strings.CutPrefix(path, m.root); ok && (rel == "" || rel[0] == '/') {
			return filepath.Join(m.point, rel), nil
		}
		return "", fmt.Errorf("%s cgroup %s is outside the mounted part (%s) of its hierarchy at %s", controller, path, m.root, m.point)
	}
	switch {
	case hasV1:
		for _, m := range mounts {
			if m.fstype == "cgroup" && slices.Contains(strings.Split(m.options, ","), controller) {
				dir, err := resolve(m, v1Path)
				return dir, 1, err
			}
		}
		return "", 0, fmt.Errorf("%s cgroup v1: the process is in a %s cgroup but no cgroup filesystem with the %s controller is mounted", controller, controller, controller)
	case hasV2:
		for _, m := range mounts {
			if m.fstype == "cgroup2" {
				dir, err := resolve(m, v2Path)
				return dir, 2, err
			}
		}
		return "", 0, fmt.Errorf("%s cgroup v2: no cgroup2 filesystem is mounted", controller)
	}
	return "", 0, fmt.Errorf("%s cgroup: the process is in no cgroup with a %s controller (/proc/self/cgroup)", controller, controller)
}

// unescapeMount undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}
