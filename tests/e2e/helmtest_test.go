package e2e

import (
	"context"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

// TestManagerHelmTest runs the chart's `helm test`. On kwok no container runs, so the test pod is
// completed by the test bed's pod-complete-helm-test Stage: this proves the hook is admitted and
// Helm sees it succeed; what it checks (/readyz) is TestManager's "the manager reports ready".
func TestManagerHelmTest(t *testing.T) {
	f := features.New("helm test").
		Assess("the chart's test hook succeeds", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if _, ok := bed.(*kwokProvider); !ok {
				// In kind the pod really asks the manager's /readyz through the Service.
				t.Log("running helm test against the in-cluster manager")
			}
			rel, err := testbed.HelmTest(suiteRelease(cfg, nil))
			if err != nil {
				t.Fatalf("helm test: %v", err)
			}
			ran := 0
			for _, h := range rel.Hooks {
				for _, ev := range h.Events {
					if ev == release.HookTest {
						ran++
						if h.LastRun.Phase != release.HookPhaseSucceeded {
							t.Errorf("test hook %s: phase %s", h.Name, h.LastRun.Phase)
						}
					}
				}
			}
			if ran != 1 {
				t.Errorf("%d test hooks ran, want 1", ran)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
