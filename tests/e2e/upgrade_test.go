package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

// TestUpgrade upgrades the installed release (what `helm upgrade` with changed values does) and
// checks that nothing users have is lost: CRDs, custom resources, copies. There is no earlier
// published chart version to start from yet; the release installed by TestMain stands in for it.
func TestUpgrade(t *testing.T) {
	const ns = "e2e-upgrade"
	f := features.New("a chart upgrade keeps every custom resource and copy")
	f = withNamespace(f, ns)
	f = f.Assess("copies, SecretSyncs and ScheduledJobs survive helm upgrade with changed values, and the copies still follow their source", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		c := ctrlClient(t, cfg)
		sj := everyMinuteJob("survivor", func(sj *v1alpha1.ScheduledJob) {
			sj.Namespace = ns
			sj.Spec.Schedule = "0 0 1 1 *"
		})
		if err := c.Create(ctx, sj); err != nil {
			t.Fatal(err)
		}
		var copyUID types.UID
		src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "secretsync", Name: "e2e-upgrade-shared"}, Type: "platform-operators.io/secretsync", Data: map[string][]byte{"v": []byte("1")}}
		if !namespacedMode() {
			if err := c.Create(ctx, src); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), src) })
			eventually(ctx, t, "copy before the upgrade", func(ctx context.Context) error { return copyIs(ctx, c, ns, src.Name, src.Data) })
			cp := &corev1.Secret{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: src.Name}, cp); err != nil {
				t.Fatal(err)
			}
			copyUID = cp.UID
		}

		vals, err := testbed.ReleaseValues(cfg.KubeconfigFile(), releaseNamespace, releaseName)
		if err != nil {
			t.Fatal(err)
		}
		vals["logging"] = map[string]any{"format": "json", "level": "debug"}
		var oldPods map[string]bool
		if isKind() {
			oldPods = currentManagerPods(ctx, t, clientset(t, cfg))
		}
		upgraded := time.Now()
		rel, err := testbed.UpgradeInstall(testbed.Release{
			Name: releaseName, Namespace: releaseNamespace, ChartDir: root + "/charts/platform-operators",
			Kubeconfig: cfg.KubeconfigFile(), Values: vals,
		}, nil)
		if err != nil {
			t.Fatalf("helm upgrade: %v", err)
		}
		if rel.Version < 2 {
			t.Fatalf("release revision %d after the upgrade, want at least 2", rel.Version)
		}

		if isKind() {
			// The copy is checked against the new pods, not a handover still under way.
			waitForRollout(ctx, t, c, clientset(t, cfg), oldPods, upgraded)
		}
		for _, name := range []string{"secretsyncs.ops.platform-operators.io", "ats.ops.platform-operators.io", "scheduledjobs.ops.platform-operators.io"} {
			if err := c.Get(ctx, types.NamespacedName{Name: name}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
				t.Errorf("CRD %s after the upgrade: %v", name, err)
			}
		}
		got := &v1alpha1.ScheduledJob{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(sj), got); err != nil || got.UID != sj.UID {
			t.Fatalf("ScheduledJob after the upgrade: err %v, uid %s (was %s)", err, got.UID, sj.UID)
		}
		if namespacedMode() {
			return ctx
		}
		cp := &corev1.Secret{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: src.Name}, cp); err != nil || cp.UID != copyUID {
			t.Fatalf("copy after the upgrade: err %v, uid %s (was %s): it must be the same object", err, cp.UID, copyUID)
		}
		if err := c.Get(ctx, types.NamespacedName{Name: "secretsync-default"}, &v1alpha1.SecretSync{}); err != nil {
			t.Fatalf("default SecretSync after the upgrade: %v", err)
		}
		cur := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(src), cur); err != nil {
			t.Fatal(err)
		}
		cur.Data = map[string][]byte{"v": []byte("2")}
		if err := c.Update(ctx, cur); err != nil {
			t.Fatal(err)
		}
		eventually(ctx, t, "copy follows its source after the upgrade", func(ctx context.Context) error { return copyIs(ctx, c, ns, src.Name, cur.Data) })
		return ctx
	})
	testenv.Test(t, f.Feature())
}
