package startup

import (
	"fmt"
	"log/slog"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// SetMemoryLimit sets the Go runtime's soft memory limit (GOMEMLIMIT) to ratio of the memory
// limit of the process's cgroup (a container's resources.limits.memory), so that the garbage
// collector collects harder as the heap nears the limit instead of letting the kubelet kill the
// process; without it the collector lets the heap grow to twice what is live before it runs. It
// does nothing when ratio is 0, when GOMEMLIMIT is set in the environment (that value wins), or
// when the cgroup has no limit (a process outside a container). It returns the limit set, 0 for
// none.
func SetMemoryLimit(ratio float64, log logr.Logger) (int64, error) {
	if ratio == 0 {
		return 0, nil
	}
	if ratio < 0 || ratio > 1 {
		return 0, fmt.Errorf("--memory-limit-ratio must be between 0 and 1, got %v", ratio)
	}
	return memlimit.SetGoMemLimitWithOpts(
		memlimit.WithRatio(ratio),
		memlimit.WithProvider(memlimit.FromCgroup),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(log))),
	)
}
