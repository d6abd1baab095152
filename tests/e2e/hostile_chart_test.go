package e2e

import (
	"context"
	"reflect"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

// A hostile tenant against what the chart installs (admission policies, Pod Security, API
// fairness), with the tenant's own printed kubeconfig: the API server refuses, whatever the
// manager would have done. Both providers run a real kube-apiserver, so this holds on kwok too.

// restricted gives a pod the securityContext Pod Security `restricted` asks for (the chart's tenant
// namespaces enforce it).
func restricted(p *corev1.Pod) *corev1.Pod {
	p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	}
	return p
}

// refusedByPolicy asserts err is the chart's admission policy named policy refusing with want.
func refusedByPolicy(t *testing.T, what string, err error, policy, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: allowed, want refused by %s", what, policy)
	}
	if msg := err.Error(); !strings.Contains(msg, "ValidatingAdmissionPolicy '"+releaseName+"-"+policy+"'") || !strings.Contains(msg, want) {
		t.Fatalf("%s: err = %v, want refused by %s with %q", what, err, policy, want)
	}
}

func TestHostileTenantAgainstTheChart(t *testing.T) {
	f := features.New("a tenant cannot forge the manager's ownership or run a privileged pod in its namespace").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kc := tenantKubeconfig(ctx, t, cfg, "--namespace", tenantNamespace, "--service-account", tenantSA, "--duration", "1h")
			return context.WithValue(ctx, tenantClientKey{}, tenantClient(t, kc))
		}).
		Assess("our ownership label on a tenant's ConfigMap is refused by the API server", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctx.Value(tenantClientKey{}).(client.Client)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: "e2e-forged-copy",
				Labels: map[string]string{keys.LabelSecretSync: "secretsync-default"}}}
			refusedByPolicy(t, "a forged copy label", c.Create(ctx, cm), "ownership-keys", "label "+keys.LabelSecretSync)
			return ctx
		}).
		Assess("our created-by label on a tenant's Job is refused by the API server", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctx.Value(tenantClientKey{}).(client.Client)
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: "e2e-forged-run",
				Labels: map[string]string{keys.LabelCreatedBy: "scheduledjob"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: restricted(testPod(tenantNamespace, "x")).Spec}}}
			job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
			refusedByPolicy(t, "a forged created-by label", c.Create(ctx, job, client.DryRunAll), "ownership-keys", "label "+keys.LabelCreatedBy)
			return ctx
		}).
		Assess("Pod Security restricted refuses a root pod in the chart's tenant namespace and admits a restricted one", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctx.Value(tenantClientKey{}).(client.Client)
			root := testPod(tenantNamespace, "e2e-root")
			root.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			if err := c.Create(ctx, root, client.DryRunAll); err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
				t.Fatalf("a privileged pod in %s: err = %v, want refused by PodSecurity restricted:latest", tenantNamespace, err)
			}
			if err := c.Create(ctx, restricted(testPod(tenantNamespace, "e2e-restricted")), client.DryRunAll); err != nil {
				t.Fatalf("a restricted pod in %s: %v", tenantNamespace, err)
			}
			return ctx
		}).
		Assess("an admin's upgrade that makes the release namespace or kube-system a tenant is refused, the release untouched", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The tenant's Role would let it run pods with any ServiceAccount beside the manager's.
			before, err := testbed.ReleaseValues(cfg.KubeconfigFile(), releaseNamespace, releaseName)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct{ ns, want string }{
				{releaseNamespace, "is the release namespace"},
				{"kube-system", "is a kube-* namespace"},
			} {
				r := suiteRelease(cfg, map[string]any{"tenants": []any{map[string]any{"namespace": tc.ns, "createNamespace": false}}})
				r.ResetThenReuseValues = true
				_, err := testbed.UpgradeInstall(r, t.Logf)
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Give the tenant a namespace of its own") {
					t.Errorf("helm upgrade with a tenant in %s: err = %v, want refused (%q)", tc.ns, err, tc.want)
				}
			}
			after, err := testbed.ReleaseValues(cfg.KubeconfigFile(), releaseNamespace, releaseName)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(before, after) {
				t.Errorf("the release's values changed after the refused upgrades:\nbefore %v\nafter  %v", before, after)
			}
			return ctx
		}).
		Assess("the manager's requests have a priority level of their own", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			fs := &flowcontrolv1.FlowSchema{}
			if err := cfg.Client().Resources().Get(ctx, releaseName, "", fs); err != nil {
				t.Fatalf("FlowSchema %s: %v", releaseName, err)
			}
			for _, c := range fs.Status.Conditions {
				if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status != flowcontrolv1.ConditionFalse {
					t.Errorf("FlowSchema %s is dangling: %s", releaseName, c.Message)
				}
			}
			if fs.Spec.PriorityLevelConfiguration.Name != releaseName {
				t.Errorf("FlowSchema %s sends the manager to %s", releaseName, fs.Spec.PriorityLevelConfiguration.Name)
			}
			return ctx
		})
	testenv.Test(t, f.Feature())
}
