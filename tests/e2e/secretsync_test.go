package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
)

var (
	ctrlClientOnce sync.Once
	ctrlClientVal  client.Client
	ctrlClientErr  error
)

// ctrlClient is the suite's one controller-runtime client that knows our API. It is shared, so
// its discovery and rate limiter are too; polls from many assessments then never starve it.
func ctrlClient(t *testing.T, cfg *envconf.Config) client.Client {
	t.Helper()
	ctrlClientOnce.Do(func() {
		scheme := runtime.NewScheme()
		if ctrlClientErr = clientgoscheme.AddToScheme(scheme); ctrlClientErr != nil {
			return
		}
		if ctrlClientErr = v1alpha1.AddToScheme(scheme); ctrlClientErr != nil {
			return
		}
		if ctrlClientErr = apiextensionsv1.AddToScheme(scheme); ctrlClientErr != nil {
			return
		}
		rc := rest.CopyConfig(cfg.Client().RESTConfig())
		rc.QPS, rc.Burst = 100, 200
		ctrlClientVal, ctrlClientErr = client.New(rc, client.Options{Scheme: scheme})
	})
	if ctrlClientErr != nil {
		t.Fatal(ctrlClientErr)
	}
	return ctrlClientVal
}

// eventually polls cond until it returns nil, and fails the test with its last error otherwise.
func eventually(ctx context.Context, t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	if err := pollFor(ctx, waitTimeout, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// pollFor polls cond every pollInterval until it returns nil or timeout passes; then it returns
// the last answer that says something about the cluster, not the poll's deadline (the context
// done, or the client's rate limiter refusing a wait that would pass it).
func pollFor(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) error) error {
	var last error
	err := wait.For(func(ctx context.Context) (bool, error) {
		err := cond(ctx)
		if err == nil || ctx.Err() == nil && !strings.Contains(err.Error(), "would exceed context deadline") {
			last = err
		}
		return err == nil, nil
	}, wait.WithContext(ctx), wait.WithInterval(pollInterval), wait.WithTimeout(timeout))
	if err == nil || last == nil {
		return err
	}
	return fmt.Errorf("%w (last: %w)", err, last)
}

func copyIs(ctx context.Context, c client.Client, ns, name string, data map[string][]byte) error {
	s := &corev1.Secret{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		return err
	}
	if s.Labels[keys.LabelSecretSync] == "" {
		return fmt.Errorf("%s/%s has no %s label", ns, name, keys.LabelSecretSync)
	}
	for k, v := range data {
		if !bytes.Equal(s.Data[k], v) {
			return fmt.Errorf("%s/%s data[%s] = %q, want %q", ns, name, k, s.Data[k], v)
		}
	}
	if len(s.Data) != len(data) {
		return fmt.Errorf("%s/%s has %d keys, want %d", ns, name, len(s.Data), len(data))
	}
	return nil
}

// createNamespace creates a namespace that is deleted when t ends (an assessment's t ends with
// the assessment; a feature's Setup t with the feature).
func createNamespace(ctx context.Context, t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

func TestSecretSync(t *testing.T) {
	skipIfNamespaced(t, "SecretSync")
	seed := features.New("the chart's default SecretSync copies the seed's Secrets to every namespace").
		Assess("a Secret of the seed type in namespace secretsync reaches a tenant namespace, byte for byte", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			createNamespace(ctx, t, c, "e2e-seed-tenant", nil)
			data := map[string][]byte{"token": {0x00, 0xff, 0x10, 'x'}}
			src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "secretsync", Name: "e2e-shared"}, Type: "platform-operators.io/secretsync", Data: data}
			if err := c.Create(ctx, src); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), src) })
			eventually(ctx, t, "copy in e2e-seed-tenant", func(ctx context.Context) error { return copyIs(ctx, c, "e2e-seed-tenant", "e2e-shared", data) })
			// Never into the excluded system namespaces.
			err := c.Get(ctx, types.NamespacedName{Namespace: "kube-system", Name: "e2e-shared"}, &corev1.Secret{})
			if !apierrors.IsNotFound(err) {
				t.Fatalf("kube-system copy: err = %v, want NotFound", err)
			}
			return ctx
		}).Feature()

	const (
		srcNS  = "e2e-ssync-source"
		tenant = "e2e-ssync-tenant"
		late   = "e2e-ssync-late"
		other  = "e2e-ssync-unlabelled"
	)
	tenantLabel := map[string]string{"e2e.platform-operators.io/tenant": "true"}
	dockerCfg := map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"harbor.example.com":{"auth":"cm9ib3QkcGxhdGZvcm0rY2k6cw=="}}}`)}
	ss := &v1alpha1.SecretSync{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-harbor-pull"},
		Spec: v1alpha1.SecretSyncSpec{
			Source:             v1alpha1.SecretSyncSource{Namespace: srcNS, Name: "harbor-pull"},
			Target:             v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: tenantLabel}},
			ImagePullSecretFor: []string{"default"},
		},
	}
	lifecycle := features.New("a SecretSync keeps a Harbor pull secret in step in tenant namespaces").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			createNamespace(ctx, t, c, srcNS, nil)
			createNamespace(ctx, t, c, tenant, tenantLabel)
			createNamespace(ctx, t, c, other, nil)
			src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: srcNS, Name: "harbor-pull"}, Type: corev1.SecretTypeDockerConfigJson, Data: dockerCfg}
			if err := c.Create(ctx, src); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, ss.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("the copy reaches the matching namespace only, and its default ServiceAccount pulls with it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			eventually(ctx, t, "copy in tenant", func(ctx context.Context) error { return copyIs(ctx, c, tenant, "harbor-pull", dockerCfg) })
			eventually(ctx, t, "default SA pulls with the copy", func(ctx context.Context) error { return pullsWith(ctx, c, tenant, "default", "harbor-pull") })
			if err := c.Get(ctx, types.NamespacedName{Namespace: other, Name: "harbor-pull"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				t.Fatalf("copy in a namespace the selector does not match: err = %v, want NotFound", err)
			}
			eventually(ctx, t, "Ready with synced 1/1", func(ctx context.Context) error {
				got := &v1alpha1.SecretSync{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(ss), got); err != nil {
					return err
				}
				cond := meta.FindStatusCondition(got.Status.Conditions, "Ready")
				if cond == nil || cond.Status != metav1.ConditionTrue || got.Status.SyncedRatio != "1/1" || got.Status.ObservedGeneration != got.Generation {
					return fmt.Errorf("status = %+v", got.Status)
				}
				return nil
			})
			return ctx
		}).
		Assess("a namespace created later gets the copy and its default ServiceAccount is patched", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			// Created here but used by the next assessments too: deleted in Teardown.
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: late, Labels: tenantLabel}}); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "copy in the new namespace", func(ctx context.Context) error { return copyIs(ctx, c, late, "harbor-pull", dockerCfg) })
			eventually(ctx, t, "new namespace's default SA", func(ctx context.Context) error { return pullsWith(ctx, c, late, "default", "harbor-pull") })
			return ctx
		}).
		Assess("a source update reaches every copy; an edited copy is restored; a deleted copy comes back", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			rotated := map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"harbor.example.com":{"auth":"cm90YXRlZA=="}}}`)}
			src := &corev1.Secret{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: srcNS, Name: "harbor-pull"}, src); err != nil {
				t.Fatal(err)
			}
			src.Data = rotated
			if err := c.Update(ctx, src); err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{tenant, late} {
				eventually(ctx, t, "rotated copy in "+ns, func(ctx context.Context) error { return copyIs(ctx, c, ns, "harbor-pull", rotated) })
			}
			cp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "harbor-pull"}}
			if err := edit(ctx, c, cp, func(cp *corev1.Secret) {
				cp.Data = map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}
				cp.Labels["team"] = "payments" // someone else's label: kept
			}); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "edited copy restored", func(ctx context.Context) error {
				if err := copyIs(ctx, c, tenant, "harbor-pull", rotated); err != nil {
					return err
				}
				got := &corev1.Secret{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: tenant, Name: "harbor-pull"}, got); err != nil {
					return err
				}
				if got.Labels["team"] != "payments" {
					return fmt.Errorf("foreign label lost: %v", got.Labels)
				}
				return nil
			})
			if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: late, Name: "harbor-pull"}}); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "deleted copy recreated", func(ctx context.Context) error { return copyIs(ctx, c, late, "harbor-pull", rotated) })
			return ctx
		}).
		Assess("deleting the source removes the copies and the ServiceAccount entries", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: srcNS, Name: "harbor-pull"}}); err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{tenant, late} {
				eventually(ctx, t, "copy gone from "+ns, func(ctx context.Context) error {
					err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "harbor-pull"}, &corev1.Secret{})
					if apierrors.IsNotFound(err) {
						return pullsWithout(ctx, c, ns, "default", "harbor-pull")
					}
					return fmt.Errorf("still there (err %w)", err)
				})
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			_ = c.Delete(ctx, ss.DeepCopy())
			_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: late}})
			return ctx
		}).Feature()

	conflict := features.New("a Secret the add-on does not manage is never overwritten").
		Assess("the unmanaged Secret stays as it was and the SecretSync reports the conflict", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			const ns = "e2e-ssync-conflict"
			createNamespace(ctx, t, c, ns, nil)
			mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e2e-owned-elsewhere"}, Type: "platform-operators.io/secretsync", Data: map[string][]byte{"k": []byte("theirs")}}
			if err := c.Create(ctx, mine); err != nil {
				t.Fatal(err)
			}
			rv := mine.ResourceVersion
			src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "secretsync", Name: "e2e-owned-elsewhere"}, Type: "platform-operators.io/secretsync", Data: map[string][]byte{"k": []byte("ours")}}
			if err := c.Create(ctx, src); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), src) })
			eventually(ctx, t, "default SecretSync reports the conflict", func(ctx context.Context) error {
				got := &v1alpha1.SecretSync{}
				if err := c.Get(ctx, types.NamespacedName{Name: "secretsync-default"}, got); err != nil {
					return err
				}
				for _, f := range got.Status.Failures {
					if f.Namespace == ns && f.Name == "e2e-owned-elsewhere" && f.Reason == "Conflict" {
						return nil
					}
				}
				return fmt.Errorf("failures = %+v", got.Status.Failures)
			})
			after := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(mine), after); err != nil {
				t.Fatal(err)
			}
			if after.ResourceVersion != rv || string(after.Data["k"]) != "theirs" || after.Labels[keys.LabelSecretSync] != "" {
				t.Fatalf("unmanaged Secret changed: rv %s→%s data %q labels %v", rv, after.ResourceVersion, after.Data["k"], after.Labels)
			}
			return ctx
		}).Feature()

	tenantForbidden := features.New("a namespace admin cannot create a SecretSync").
		Assess("the API answers Forbidden to a ServiceAccount bound to admin in its namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			const ns = "e2e-ssync-tenant-admin"
			createNamespace(ctx, t, c, ns, nil)
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}}
			rb := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-admin"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "tenant"}},
			}
			for _, o := range []client.Object{sa, rb} {
				if err := c.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			tc, err := client.New(serviceAccountConfig(ctx, t, cfg, ns, "tenant"), client.Options{Scheme: c.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			// The tenant can act in its namespace...
			if err := tc.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); err != nil {
				t.Fatalf("tenant listing its own Secrets: %v", err)
			}
			// ...but cannot aim a SecretSync at another namespace's Secrets.
			steal := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "e2e-steal"}, Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Namespace: "kube-system", Selector: &metav1.LabelSelector{}},
				Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
			}}
			if err := tc.Create(ctx, steal); !apierrors.IsForbidden(err) {
				t.Fatalf("tenant creating a SecretSync: err = %v, want Forbidden", err)
			}
			return ctx
		}).Feature()

	testenv.Test(t, seed, lifecycle, conflict, tenantForbidden)
}

func pullsWith(ctx context.Context, c client.Client, ns, sa, secret string) error {
	got := &corev1.ServiceAccount{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: sa}, got); err != nil {
		return err
	}
	if !slices.Contains(got.ImagePullSecrets, corev1.LocalObjectReference{Name: secret}) {
		return fmt.Errorf("%s/%s imagePullSecrets = %v, want %s", ns, sa, got.ImagePullSecrets, secret)
	}
	return nil
}

func pullsWithout(ctx context.Context, c client.Client, ns, sa, secret string) error {
	if err := pullsWith(ctx, c, ns, sa, secret); err == nil {
		return fmt.Errorf("%s/%s still pulls with %s", ns, sa, secret)
	}
	return nil
}
