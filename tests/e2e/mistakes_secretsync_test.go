package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// A mistaken `kubectl delete ns <source namespace>` runs the namespace controller (not in
// envtest): the namespace turns Terminating, its Secrets are deleted, then the namespace. None of
// it may take a copy or an imagePullSecrets entry from a tenant, whatever deletionPolicy says.
func TestDeletingTheSourceNamespaceKeepsEveryCopy(t *testing.T) {
	skipIfNamespaced(t, "SecretSync")
	const (
		srcNS   = "e2e-mistake-source"
		tenantA = "e2e-mistake-tenant-a"
		tenantB = "e2e-mistake-tenant-b"
		name    = "e2e-mistake-pull"
	)
	tenants := []string{tenantA, tenantB}
	tenantLabel := map[string]string{"e2e.platform-operators.io/mistake-tenant": "true"}
	dockerCfg := func(auth string) map[string][]byte {
		return map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"harbor.example.com":{"auth":"` + auth + `"}}}`)}
	}
	source := func(auth string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: srcNS, Name: "harbor-pull"}, Type: corev1.SecretTypeDockerConfigJson, Data: dockerCfg(auth)}
	}
	ss := &v1alpha1.SecretSync{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SecretSyncSpec{
			Source:             v1alpha1.SecretSyncSource{Namespace: srcNS, Name: "harbor-pull"},
			Target:             v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: tenantLabel}},
			DeletionPolicy:     v1alpha1.DeletionPolicyDelete,
			ImagePullSecretFor: []string{"default"},
		},
	}
	ready := func(ctx context.Context, c client.Client, reason string) error {
		got := &v1alpha1.SecretSync{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ss), got); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, "Ready")
		if cond == nil || cond.Reason != reason || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("status = %+v, want Ready reason %s", got.Status, reason)
		}
		return nil
	}
	uids := map[string]types.UID{}
	f := features.New("deleting a SecretSync's source namespace takes no copy and no pull-secret entry").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			createNamespace(ctx, t, c, srcNS, nil)
			for _, ns := range tenants {
				createNamespace(ctx, t, c, ns, tenantLabel)
			}
			if err := c.Create(ctx, source("b2xk")); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, ss.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("every tenant has the copy and its default ServiceAccount pulls with it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			for _, ns := range tenants {
				eventually(ctx, t, "copy in "+ns, func(ctx context.Context) error { return copyIs(ctx, c, ns, "harbor-pull", dockerCfg("b2xk")) })
				eventually(ctx, t, "default SA of "+ns, func(ctx context.Context) error { return pullsWith(ctx, c, ns, "default", "harbor-pull") })
				s := &corev1.Secret{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "harbor-pull"}, s); err != nil {
					t.Fatal(err)
				}
				uids[ns] = s.UID
			}
			eventually(ctx, t, "Ready", func(ctx context.Context) error { return ready(ctx, c, "Synced") })
			return ctx
		}).
		Assess("the source namespace is deleted to the end: every copy and entry stays", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: srcNS}}); err != nil {
				t.Fatal(err)
			}
			// kube-controller-manager's namespace controller lists and deletes every kind in the
			// namespace, and backs off exponentially when discovery or a delete fails: at load 40
			// on the test bed's two cores a namespace took more than the usual minute.
			if err := pollFor(ctx, 3*waitTimeout, func(ctx context.Context) error {
				err := c.Get(ctx, types.NamespacedName{Name: srcNS}, &corev1.Namespace{})
				switch {
				case apierrors.IsNotFound(err):
					return nil
				case err != nil:
					return fmt.Errorf("reading it: %w", err)
				}
				return errors.New("still there")
			}); err != nil {
				t.Fatalf("the namespace controller deletes the source namespace: %v", err)
			}
			eventually(ctx, t, "Ready=False SourceNamespaceNotFound", func(ctx context.Context) error { return ready(ctx, c, "SourceNamespaceNotFound") })
			for _, ns := range tenants {
				s := &corev1.Secret{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "harbor-pull"}, s); err != nil || s.UID != uids[ns] {
					t.Errorf("the copy in %s was deleted or replaced (err %v)", ns, err)
				}
				if err := pullsWith(ctx, c, ns, "default", "harbor-pull"); err != nil {
					t.Error(err)
				}
			}
			return ctx
		}).
		Assess("the namespace re-created with a new source: the copies follow it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			createNamespace(ctx, t, c, srcNS, nil)
			if err := c.Create(ctx, source("bmV3")); err != nil {
				t.Fatal(err)
			}
			for _, ns := range tenants {
				eventually(ctx, t, "new data in "+ns, func(ctx context.Context) error { return copyIs(ctx, c, ns, "harbor-pull", dockerCfg("bmV3")) })
				// Eventually, not at once: a pass between the namespace's and the Secret's creation
				// sees the source removed (deletionPolicy Delete takes the copies and their entries),
				// and a pass writes the copies before the ServiceAccounts.
				eventually(ctx, t, "default SA of "+ns, func(ctx context.Context) error { return pullsWith(ctx, c, ns, "default", "harbor-pull") })
			}
			eventually(ctx, t, "Ready", func(ctx context.Context) error { return ready(ctx, c, "Synced") })
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			if err := c.Delete(ctx, ss.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting SecretSync %s: %v", name, err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
