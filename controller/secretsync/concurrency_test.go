package secretsync

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operators/platform-operators/controller/propagation"
)

func TestConcurrentWritesBoundTheBytesInFlight(t *testing.T) {
	copyOf := func(size int) propagation.Action {
		return propagation.Action{Op: propagation.OpCreate, Want: &corev1.Secret{Data: map[string][]byte{"a": make([]byte, size/2), "b": make([]byte, size-size/2)}}}
	}
	cases := []struct {
		name    string
		workers int
		actions []propagation.Action
		want    int
	}{
		{"small copies use every worker", 32, []propagation.Action{copyOf(2048), copyOf(2048)}, 32},
		{"nothing to write uses every worker", 32, nil, 32},
		{"deletes carry no data", 32, []propagation.Action{{Op: propagation.OpDelete}}, 32},
		{"a 1 MiB copy uses four", 32, []propagation.Action{copyOf(1 << 20)}, 4},
		{"the largest copy decides", 32, []propagation.Action{copyOf(2048), copyOf(512 << 10), copyOf(100)}, 8},
		{"never fewer than one", 32, []propagation.Action{copyOf(inFlightBytes * 2)}, 1},
		{"never more than the workers", 4, []propagation.Action{copyOf(10)}, 4},
		{"zero workers means one", 0, []propagation.Action{copyOf(10)}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := concurrentWrites(tc.workers, propagation.Plan{Actions: tc.actions}); got != tc.want {
				t.Errorf("concurrentWrites(%d, ...) = %d, want %d", tc.workers, got, tc.want)
			}
		})
	}
}
