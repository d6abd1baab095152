package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// TestCopies covers what SecretSync gained beyond copying one Secret as is: ConfigMaps, renamed
// copies, extra labels, key selection, namespace globs, and pull mode through a tenant's
// CopyRequest with the chart's aggregated roles.
func TestCopies(t *testing.T) {
	skipIfNamespaced(t, "SecretSync")
	configMaps := features.New("a SecretSync of a ConfigMap with a renamed copy, labels, renamed keys and a namespace glob").
		Assess("the copies reach the namespaces the glob and the selector both pick, data and binaryData apart, and follow updates", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			const src, label = "e2e-cm-src", "e2e.platform-operators.io/cm"
			createNamespace(ctx, t, c, src, nil)
			in := []string{"e2e-cm-team-a", "e2e-cm-team-b"}
			for _, ns := range in {
				createNamespace(ctx, t, c, ns, map[string]string{label: "yes"})
			}
			createNamespace(ctx, t, c, "e2e-cm-other", map[string]string{label: "yes"}) // labelled, but not team-*
			createNamespace(ctx, t, c, "e2e-cm-team-c", nil)                            // team-*, but not labelled
			der := []byte{0x30, 0x82, 0x00, 0xff}
			bundle := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "ca-bundle"},
				Data: map[string]string{"ca.crt": "PEM-1", "notes.txt": "internal"}, BinaryData: map[string][]byte{"ca.der": der}}
			if err := c.Create(ctx, bundle); err != nil {
				t.Fatal(err)
			}
			ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "e2e-ca-bundle"}, Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Kind: v1alpha1.CopyKindConfigMap, Namespace: src, Name: "ca-bundle"},
				Target: v1alpha1.SecretSyncTarget{
					Name:              "trust",
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "yes"}},
					IncludeNamespaces: []string{"e2e-cm-team-*"},
					Labels:            map[string]string{"argocd.argoproj.io/instance": "tenants"},
				},
				Keys: &v1alpha1.SecretSyncKeys{Exclude: []string{"notes.txt"}, Rename: []v1alpha1.KeyRename{{From: "ca.crt", To: "ca-bundle.crt"}}},
			}}
			if err := c.Create(ctx, ss); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), ss) })
			want := func(pem string) func(context.Context) error {
				return func(ctx context.Context) error {
					for _, ns := range in {
						cm := &corev1.ConfigMap{}
						if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "trust"}, cm); err != nil {
							return err
						}
						if len(cm.Data) != 1 || cm.Data["ca-bundle.crt"] != pem || len(cm.BinaryData) != 1 || !bytes.Equal(cm.BinaryData["ca.der"], der) {
							return fmt.Errorf("%s/trust data %v binaryData %v", ns, cm.Data, cm.BinaryData)
						}
						if cm.Labels["argocd.argoproj.io/instance"] != "tenants" || cm.Labels[keys.LabelSecretSync] != ss.Name {
							return fmt.Errorf("%s/trust labels %v", ns, cm.Labels)
						}
					}
					return nil
				}
			}
			eventually(ctx, t, "the renamed ConfigMap copies", want("PEM-1"))
			for _, ns := range []string{"e2e-cm-other", "e2e-cm-team-c", src} {
				if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "trust"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
					t.Errorf("namespace %s got a copy (or the read failed): %v", ns, err)
				}
			}
			bundle.Data["ca.crt"] = "PEM-2"
			if err := c.Update(ctx, bundle); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "the rotated bundle in every copy", want("PEM-2"))
			eventually(ctx, t, "the SecretSync is Ready 2/2", func(ctx context.Context) error {
				got := &v1alpha1.SecretSync{}
				if err := c.Get(ctx, types.NamespacedName{Name: ss.Name}, got); err != nil {
					return err
				}
				if !meta.IsStatusConditionTrue(got.Status.Conditions, "Ready") || got.Status.SyncedRatio != "2/2" {
					return fmt.Errorf("status %+v", got.Status)
				}
				return nil
			})
			if err := c.Delete(ctx, ss); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "the copies go with the SecretSync", func(ctx context.Context) error {
				for _, ns := range in {
					if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "trust"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
						return fmt.Errorf("%s/trust: %w", ns, err)
					}
				}
				return nil
			})
			return ctx
		}).Feature()

	pull := features.New("pull mode: a namespace admin asks for an offered Secret with a CopyRequest").
		Assess("only the offered source is copied, into the tenant's namespace, and goes with the request", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			const platform, team = "e2e-pull-platform", "e2e-pull-team"
			createNamespace(ctx, t, c, platform, nil)
			createNamespace(ctx, t, c, team, nil)
			offered := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "api-token",
				Labels: map[string]string{keys.LabelOffer: "true"}, Annotations: map[string]string{keys.AnnotationOfferNamespaces: "e2e-pull-*"}},
				Data: map[string][]byte{"token": []byte("offered")}}
			hidden := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: platform, Name: "root-token"}, Data: map[string][]byte{"token": []byte("hidden")}}
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "tenant"}}
			// The built-in admin role, which the chart's aggregated roles extend with CopyRequests.
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "tenant-admin"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: team, Name: "tenant"}}}
			for _, o := range []client.Object{offered, hidden, sa, rb} {
				if err := c.Create(ctx, o); err != nil {
					t.Fatal(err)
				}
			}
			tc, err := client.New(serviceAccountConfig(ctx, t, cfg, team, "tenant"), client.Options{Scheme: c.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.Get(ctx, client.ObjectKeyFromObject(hidden), &corev1.Secret{}); !apierrors.IsForbidden(err) {
				t.Fatalf("the tenant reads the platform's Secret directly: %v", err)
			}
			ready := func(name string) func(context.Context) error {
				return func(ctx context.Context) error {
					cr := &v1alpha1.CopyRequest{}
					if err := tc.Get(ctx, types.NamespacedName{Namespace: team, Name: name}, cr); err != nil {
						return err
					}
					cond := meta.FindStatusCondition(cr.Status.Conditions, "Ready")
					if cond == nil {
						return errors.New("no Ready condition")
					}
					if cond.Status != metav1.ConditionTrue {
						return fmt.Errorf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
					}
					return nil
				}
			}
			for _, cr := range []*v1alpha1.CopyRequest{
				{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "root"}, Spec: v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Namespace: platform, Name: "root-token"}}},
				{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "api"}, Spec: v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Namespace: platform, Name: "api-token"}, Name: "platform-api"}},
			} {
				if err := tc.Create(ctx, cr); err != nil {
					t.Fatalf("the tenant (admin in its namespace) creating CopyRequest %s: %v", cr.Name, err)
				}
			}
			eventually(ctx, t, "the offered Secret is copied", ready("api"))
			got := &corev1.Secret{}
			if err := tc.Get(ctx, types.NamespacedName{Namespace: team, Name: "platform-api"}, got); err != nil || string(got.Data["token"]) != "offered" {
				t.Fatalf("the tenant reading its copy: %v %q", err, got.Data["token"])
			}
			eventually(ctx, t, "the request for a source not offered is refused", func(ctx context.Context) error {
				err := ready("root")(ctx)
				if err == nil {
					return errors.New("the hidden Secret was copied")
				}
				cr := &v1alpha1.CopyRequest{}
				if gerr := tc.Get(ctx, types.NamespacedName{Namespace: team, Name: "root"}, cr); gerr != nil {
					return gerr
				}
				if cond := meta.FindStatusCondition(cr.Status.Conditions, "Ready"); cond == nil || cond.Reason != "NotOffered" {
					return fmt.Errorf("not refused yet: %w", err)
				}
				return nil
			})
			if err := tc.Get(ctx, types.NamespacedName{Namespace: team, Name: "root-token"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
				t.Errorf("a copy of the hidden Secret exists (or the read failed): %v", err)
			}
			if err := tc.Delete(ctx, &v1alpha1.CopyRequest{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "api"}}); err != nil {
				t.Fatal(err)
			}
			eventually(ctx, t, "the copy goes with its CopyRequest", func(ctx context.Context) error {
				if err := c.Get(ctx, types.NamespacedName{Namespace: team, Name: "platform-api"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("still there: %w", err)
				}
				return nil
			})
			return ctx
		}).Feature()

	testenv.Test(t, configMaps, pull)
}
