package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The kubelet's conversion of a CPU request into the CPU weight of a pod's cgroup, copied here so
// the benchmarks give a host process exactly the share a pod gets (k8s.io/kubernetes v1.36.3):
//
//   - cgroup v1: cpu.shares = MilliCPUToShares(request) = request*1024/1000, at least 2 (and at
//     most 262144), pkg/kubelet/cm/helpers_linux.go,
//     https://github.com/kubernetes/kubernetes/blob/v1.36.3/pkg/kubelet/cm/helpers_linux.go
//   - cgroup v2: cpu.weight = 1 + ((shares-2)*9999)/262142, the kubelet's getCPUWeight for the
//     pod and QoS cgroups, pkg/kubelet/cm/cgroup_manager_linux.go,
//     https://github.com/kubernetes/kubernetes/blob/v1.36.3/pkg/kubelet/cm/cgroup_manager_linux.go
//     (documented in https://kubernetes.io/docs/concepts/architecture/cgroups/ and KEP-2254).
//
// The container's own cgroup below the pod's is written by the runtime: runc >= 1.3.2 and
// github.com/opencontainers/cgroups v0.0.6 map shares to a weight on a quadratic curve instead
// (10m: weight 4, not 1), but the container is the pod's only child, so the pod cgroup's weight
// is what competes with other pods.
const (
	minShares    = 2
	maxShares    = 262144
	sharesPerCPU = 1024
)

// CPUShares is the cgroup v1 cpu.shares the kubelet gives a pod requesting milliCPU.
func CPUShares(milliCPU int64) uint64 {
	if milliCPU <= 0 {
		return minShares
	}
	shares := milliCPU * sharesPerCPU / 1000
	return uint64(min(max(shares, minShares), maxShares))
}

// CPUWeight is the cgroup v2 cpu.weight the kubelet gives a cgroup of the given cpu.shares.
func CPUWeight(shares uint64) uint64 {
	shares = min(max(shares, minShares), maxShares)
	return 1 + ((shares-2)*9999)/262142
}

// CPUCgroup is a CPU cgroup made for one process, as the kubelet makes one for a pod with
// resources.requests.cpu: its weight (v1 cpu.shares, v2 cpu.weight) comes from the request, and
// optionally a CFS quota from a CPU limit.
type CPUCgroup struct {
	// Dir is the cgroup's directory.
	Dir string
	// Version is the cgroup version: 1 (cpu.shares) or 2 (cpu.weight).
	Version int
	// MilliCPU is the request the weight was last set from.
	MilliCPU int64
}

// NewCPUCgroup creates a child of the calling process's CPU cgroup, named prefix-<pid>-<n>, with
// the weight the kubelet gives a pod requesting milliCPU. On cgroup v2 the cpu controller must be
// enabled for the parent's children (cgroup.subtree_control); the error says so when it is not.
func NewCPUCgroup(prefix string, milliCPU int64) (*CPUCgroup, error) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("cpu cgroup: %w", err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cpu cgroup: %w", err)
	}
	parent, version, err := cgroupDir("cpu", string(self), string(mounts))
	if err != nil {
		return nil, err
	}
	return newCPUCgroupIn(parent, version, prefix, milliCPU)
}

// NewChild creates a CPU cgroup below c, named prefix-<pid>-<n>, with the weight of milliCPU:
// c stands for a node's pods cgroup, its children for the pods.
func (c *CPUCgroup) NewChild(prefix string, milliCPU int64) (*CPUCgroup, error) {
	return newCPUCgroupIn(c.Dir, c.Version, prefix, milliCPU)
}

func newCPUCgroupIn(parent string, version int, prefix string, milliCPU int64) (*CPUCgroup, error) {
	c := &CPUCgroup{Dir: filepath.Join(parent, fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), cgroupSeq.Add(1))), Version: version}
	if err := os.Mkdir(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("cpu cgroup v%d: creating a child of %s: %w", version, parent, err)
	}
	if err := c.SetRequest(milliCPU); err != nil {
		_ = os.Remove(c.Dir)
		if version == 2 && errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("cpu cgroup v2: the cpu controller is not enabled for the children of %s (its cgroup.subtree_control)", parent)
		}
		return nil, err
	}
	return c, nil
}

// Add moves a running process, all its threads, into the cgroup.
func (c *CPUCgroup) Add(pid int) error {
	if err := os.WriteFile(filepath.Join(c.Dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("moving pid %d into %s: %w", pid, c.Dir, err)
	}
	return nil
}

// SetRequest sets the weight the kubelet gives a pod requesting milliCPU, as an in-place resize
// would, without restarting the process.
func (c *CPUCgroup) SetRequest(milliCPU int64) error {
	file, value := "cpu.shares", CPUShares(milliCPU)
	if c.Version == 2 {
		file, value = "cpu.weight", CPUWeight(value)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, file), []byte(strconv.FormatUint(value, 10)), 0o644); err != nil {
		return fmt.Errorf("cpu cgroup v%d: setting %s: %w", c.Version, file, err)
	}
	c.MilliCPU = milliCPU
	return nil
}

// Weight reads the cgroup's cpu.shares (v1) or cpu.weight (v2) back.
func (c *CPUCgroup) Weight() (uint64, error) {
	file := "cpu.shares"
	if c.Version == 2 {
		file = "cpu.weight"
	}
	b, err := os.ReadFile(filepath.Join(c.Dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// SetLimit sets a CFS quota of milliCPU (a CPU limit, as the kubelet writes one with its default
// 100 ms period); 0 removes it.
func (c *CPUCgroup) SetLimit(milliCPU int64) error {
	const period = 100000 // µs
	if c.Version == 2 {
		v := "max 100000"
		if milliCPU > 0 {
			v = fmt.Sprintf("%d %d", max(milliCPU*period/1000, 1000), period)
		}
		return os.WriteFile(filepath.Join(c.Dir, "cpu.max"), []byte(v), 0o644)
	}
	quota := int64(-1)
	if milliCPU > 0 {
		quota = max(milliCPU*period/1000, 1000)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "cpu.cfs_period_us"), []byte(strconv.Itoa(period)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.Dir, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(quota, 10)), 0o644)
}

// Holds reports whether pid is a member of the cgroup.
func (c *CPUCgroup) Holds(pid int) bool { return cgroupHolds(c.Dir, pid) }

// Remove deletes the cgroup, waiting up to timeout for its processes to be gone. A cgroup
// already gone is fine.
func (c *CPUCgroup) Remove(timeout time.Duration) error { return removeCgroup("cpu", c.Dir, timeout) }
