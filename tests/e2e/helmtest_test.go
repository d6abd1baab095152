package e2e

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"helm.sh/helm/v3/pkg/release"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

// TestManagerHelmTest runs the chart's `helm test`. On kwok no container runs, so the test pod is
// completed by the test bed's pod-complete-helm-test Stage: this proves the hook is admitted and
// Helm sees it succeed; what it checks (/readyz) is TestManager's "the manager reports ready".
// It runs twice, as `helm test --logs` on kind (kwok runs no kubelet to serve a log): the log is
// read after the run, so a test pod deleted on success fails it, and a rerun must replace the
// pod the first run left.
func TestManagerHelmTest(t *testing.T) {
	f := features.New("helm test").
		Assess("the chart's test hook succeeds, keeps its log and runs again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			_, onKwok := bed.(*kwokProvider)
			if !onKwok {
				// In kind the pod really asks the manager's /readyz through the Service.
				t.Log("running helm test --logs against the in-cluster manager")
			}
			for run := 1; run <= 2; run++ {
				var logs strings.Builder
				var w io.Writer = &logs
				if onKwok {
					w = nil
				}
				rel, err := testbed.HelmTest(suiteRelease(cfg, nil), w)
				if err != nil {
					t.Fatalf("helm test (run %d): %v", run, err)
				}
				ran := 0
				for _, h := range rel.Hooks {
					for _, ev := range h.Events {
						if ev == release.HookTest {
							ran++
							if h.LastRun.Phase != release.HookPhaseSucceeded {
								t.Errorf("test hook %s (run %d): phase %s", h.Name, run, h.LastRun.Phase)
							}
						}
					}
				}
				if ran != 1 {
					t.Errorf("%d test hooks ran (run %d), want 1", ran, run)
				}
				pod := releaseName + "-test-readyz"
				if onKwok {
					// What `helm test --logs` needs: the pod is still there after it succeeded.
					p, err := clientset(t, cfg).CoreV1().Pods(releaseNamespace).Get(ctx, pod, metav1.GetOptions{})
					if err != nil {
						t.Fatalf("the test pod after helm test (run %d): %v", run, err)
					}
					if p.Status.Phase != corev1.PodSucceeded {
						t.Errorf("the test pod after helm test (run %d): phase %s, want Succeeded", run, p.Status.Phase)
					}
					continue
				}
				// `manager probe` prints the answer on success: "200 OK: ok".
				if out := logs.String(); !strings.Contains(out, "POD LOGS: "+pod) || !strings.Contains(out, "200 OK") {
					t.Errorf("helm test --logs (run %d) printed %q, want the test pod's log with the manager's 200 OK", run, out)
				}
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
			_, err := testbed.HelmTest(r, nil)
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
