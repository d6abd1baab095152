package startup

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

func TestSetMemoryLimitRefusesARatioOutOfRange(t *testing.T) {
	for _, r := range []float64{-0.1, 1.5} {
		if _, err := SetMemoryLimit(r, logr.Discard()); err == nil || !strings.Contains(err.Error(), "between 0 and 1") {
			t.Errorf("ratio %v: err = %v, want it refused", r, err)
		}
	}
}

func TestSetMemoryLimitZeroSetsNothing(t *testing.T) {
	if got, err := SetMemoryLimit(0, logr.Discard()); got != 0 || err != nil {
		t.Errorf("ratio 0: limit %d, err %v; want nothing set", got, err)
	}
}

// An explicit GOMEMLIMIT wins over the cgroup's limit.
func TestSetMemoryLimitLeavesAnExplicitGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "80MiB")
	if got, err := SetMemoryLimit(0.9, logr.Discard()); got != 0 || err != nil {
		t.Errorf("with GOMEMLIMIT set: limit %d, err %v; want it left alone", got, err)
	}
}
