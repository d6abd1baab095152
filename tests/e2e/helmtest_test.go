package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		}).
		Assess("with no manager running, helm test fails and says why", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			skipUnlessKind(t)
			cs := clientset(t, cfg)
			scale := func(n int32) {
				t.Helper()
				s, err := cs.AppsV1().Deployments(releaseNamespace).GetScale(ctx, releaseName, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				s.Spec.Replicas = n
				if _, err := cs.AppsV1().Deployments(releaseNamespace).UpdateScale(ctx, releaseName, s, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			scale(0)
			defer func() {
				scale(2)
				waitFor(ctx, t, 2*waitTimeout, "the manager never came back", func(ctx context.Context) (bool, error) {
					pods, err := managerPods(ctx, cs)
					return err == nil && len(pods) == 2 && podReady(pods[0]) && podReady(pods[1]), nil
				})
			}()
			waitFor(ctx, t, waitTimeout, "the manager pods never went away", func(ctx context.Context) (bool, error) {
				_, err := managerPods(ctx, cs)
				return err != nil, nil
			})
			r := suiteRelease(cfg, nil)
			r.Timeout = 3 * time.Minute
			_, err := testbed.HelmTest(r)
			if err == nil {
				t.Fatal("helm test passed with the Deployment scaled to 0")
			}
			log, lerr := podLogs(ctx, cs, releaseNamespace, releaseName+"-test-readyz", "readyz")
			if lerr != nil {
				t.Fatalf("helm test failed (%v); its pod's log: %v", err, lerr)
			}
			if !strings.Contains(log, "manager not ready at http://"+releaseName+"-metrics."+releaseNamespace+".svc") {
				t.Errorf("helm test failed (%v) with pod log %q, want it to name the manager's /readyz URL", err, log)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
