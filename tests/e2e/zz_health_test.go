package e2e

// This file's name sorts last: go test runs the files' tests in that order, so these assessments
// look back over the whole kind suite.

import (
	"context"
	"slices"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

func TestManagerStayedHealthy(t *testing.T) {
	f := features.New("the in-cluster manager stayed healthy through the suite").
		Assess("no manager container restarted, from the first install on", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			skipUnlessKind(t)
			pods, err := managerPods(ctx, clientset(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pods {
				for _, st := range p.Status.ContainerStatuses {
					if st.RestartCount != 0 {
						t.Errorf("pod %s container %s restarted %d time(s); last state %+v", p.Name, st.Name, st.RestartCount, st.LastTerminationState)
					}
				}
			}
			return ctx
		}).
		Assess("no running replica answered /readyz with anything but 200 after it first became ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			skipUnlessKind(t)
			kp := bed.(*kindProvider)
			if kp.prober == nil {
				t.Fatal("the /readyz prober did not run")
			}
			probes, answered, neverReady, failures := kp.prober.Snapshot()
			t.Logf("%d /readyz probes of the manager pods (every %s), %d answered 200, %d unanswered within 2 s (a failure only at %d in a row)", probes, kp.prober.probeEvery, answered, kp.prober.Unanswered(), unansweredLimit)
			// The probe must work for the check to mean anything: the pods running now were ready.
			if answered == 0 {
				t.Error("no /readyz probe was answered 200")
			}
			pods, err := managerPods(ctx, clientset(t, cfg))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pods {
				if slices.Contains(neverReady, p.Name) {
					t.Errorf("running manager pod %s never answered /readyz with 200", p.Name)
				}
			}
			for _, f := range failures {
				t.Errorf("/readyz not ready: %s", f)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
