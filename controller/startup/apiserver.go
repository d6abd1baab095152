package startup

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Defaults of APIServerWait's test seams.
const (
	defaultInitialDelay   = 200 * time.Millisecond
	defaultMaxDelay       = 5 * time.Second
	defaultAttemptTimeout = 5 * time.Second
)

// APIServerWait waits until the Kubernetes API server answers. ctrl.NewManager asks the server
// for its API groups at once and fails when it cannot reach it; on a node that just joined,
// kube-proxy may not yet route the kubernetes Service VIP (`dial tcp 10.96.0.1:443: connect:
// network is unreachable`), so the manager waits a bounded time instead of exiting.
type APIServerWait struct {
	// Ping asks the API server once; nil means it answered.
	Ping func(ctx context.Context) error
	// Host names the API server in logs and errors.
	Host string
	// Timeout bounds the whole wait; 0 makes a single attempt.
	Timeout time.Duration
	// Log gets one line per failed attempt.
	Log logr.Logger

	// Test seams; zero values mean the production settings.

	// InitialDelay is the pause after the first failed attempt (default 200ms); it doubles after
	// each failure up to MaxDelay (default 5s).
	InitialDelay, MaxDelay time.Duration
	// AttemptTimeout bounds one attempt (default 5s), so a black-holed address cannot use up the
	// whole wait in one dial.
	AttemptTimeout time.Duration
	// Clock times the pauses (default the real clock).
	Clock clock.Clock
}

// Run pings until the API server answers, Timeout has passed, or ctx ends. The error names the
// host, the number of attempts and the last failure.
func (w APIServerWait) Run(ctx context.Context) error {
	clk := cmp.Or[clock.Clock](w.Clock, clock.RealClock{})
	backoff := wait.Backoff{
		Duration: cmp.Or(w.InitialDelay, defaultInitialDelay),
		Factor:   2,
		Cap:      cmp.Or(w.MaxDelay, defaultMaxDelay),
		Steps:    math.MaxInt32,
	}
	attemptTimeout := cmp.Or(w.AttemptTimeout, defaultAttemptTimeout)
	deadline := clk.Now().Add(w.Timeout)
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := w.Ping(actx)
		cancel()
		if err == nil {
			if attempt > 1 {
				w.Log.Info("The Kubernetes API server answers", "host", w.Host, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("waiting for the Kubernetes API server at %s: %w", w.Host, ctx.Err())
		}
		if w.Timeout <= 0 {
			return fmt.Errorf("the Kubernetes API server at %s does not answer (--api-server-wait-timeout=0: no retries): %w", w.Host, err)
		}
		remaining := deadline.Sub(clk.Now())
		if remaining <= 0 {
			return fmt.Errorf("the Kubernetes API server at %s did not answer within %s (%d attempts, --api-server-wait-timeout): %w", w.Host, w.Timeout, attempt, err)
		}
		delay := min(backoff.Step(), remaining)
		w.Log.Info("Waiting for the Kubernetes API server", "host", w.Host, "error", err.Error(), "attempt", attempt, "retryIn", delay.String())
		t := clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for the Kubernetes API server at %s: %w", w.Host, ctx.Err())
		case <-t.C():
		}
	}
}

// ReadyzPing returns a Ping that GETs the API server's /readyz with cfg's credentials (every
// client may: the built-in system:public-info-viewer ClusterRole grants it). A 200 means the
// server is reachable and ready to serve, which is what the manager's discovery needs next.
func ReadyzPing(cfg *rest.Config) (func(context.Context) error, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	rc := dc.RESTClient()
	return func(ctx context.Context) error {
		// One request per attempt: the wait loop does the retrying and the logging.
		return rc.Get().AbsPath("/readyz").MaxRetries(0).Do(ctx).Error()
	}, nil
}
