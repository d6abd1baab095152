package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// The manager's own secrets never leave its namespace, whatever an admin's SecretSync says
// (issue 34): its ownership key (the HMAC key every ownership proof rests on), its Helm release
// (the values, with the pull credentials' passwords) and ServiceAccount tokens. An admin's
// SecretSync of source {namespace: <the manager's>, selector: {}} once copied the key and the
// release into a tenant's namespace within 20 s.

const (
	helmReleaseType = corev1.SecretType("helm.sh/release.v1")
	// ownSecretsWatch is how long a target namespace is watched for a secret of the manager's.
	ownSecretsWatch = 20 * time.Second
)

// ownSecretIn returns a Secret of the manager's own kind found in namespace ns (its ownership
// key, however many a key ring holds, a Helm release, a ServiceAccount token), or nil.
func ownSecretIn(ctx context.Context, c client.Client, ns string) (*corev1.Secret, error) {
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for i := range list.Items {
		s := &list.Items[i]
		if strings.HasPrefix(s.Name, releaseName+"-ownership-key") || strings.HasPrefix(s.Name, "sh.helm.release.v1.") ||
			s.Type == helmReleaseType || s.Type == corev1.SecretTypeServiceAccountToken {
			return s, nil
		}
	}
	return nil, nil
}

// neverOwnSecretsIn fails the test when a Secret of the manager's own kind appears in ns within d.
func neverOwnSecretsIn(ctx context.Context, t *testing.T, c client.Client, ns string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); ; {
		s, err := ownSecretIn(ctx, c, ns)
		if err != nil {
			t.Fatal(err)
		}
		if s != nil {
			t.Fatalf("Secret %s/%s (type %s) was copied into a target namespace: the manager's own secrets must never leave its namespace", s.Namespace, s.Name, s.Type)
		}
		if time.Now().After(end) {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// vapBinding is the binding named in a refusal by a ValidatingAdmissionPolicy ("" for another
// refusal, such as the CRD's schema).
var vapBinding = regexp.MustCompile(`ValidatingAdmissionPolicy '[^']+' with binding '([^']+)'`)

// unbindForTheTest deletes a ValidatingAdmissionPolicyBinding until the test ends (as on a
// cluster without the chart's policies), so that the manager's own defence behind it is tested.
func unbindForTheTest(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, binding); err != nil {
		t.Fatal(err)
	}
	saved := binding.DeepCopy()
	if err := c.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		restored := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{
			Name: saved.Name, Labels: saved.Labels, Annotations: saved.Annotations}, Spec: saved.Spec}
		if err := c.Create(context.Background(), restored); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("restoring the binding %s: %v", name, err)
		}
	})
}

// deleteAndWait deletes o and waits (a minute at most) until it is gone.
func deleteAndWait(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	ctx := context.Background()
	if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %s: %v", o.GetName(), err)
		return
	}
	if wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(o), o)), nil
	}) == nil {
		return
	}
	t.Errorf("%s still there a minute after its delete", o.GetName())
}

// syncedOnce waits until the manager has answered the SecretSync's current generation.
func syncedOnce(ctx context.Context, t *testing.T, c client.Client, name string) {
	t.Helper()
	eventually(ctx, t, "the manager answering SecretSync "+name, func(ctx context.Context) error {
		got := &v1alpha1.SecretSync{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, got); err != nil {
			return err
		}
		if got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", got.Status.ObservedGeneration, got.Generation)
		}
		return nil
	})
}

func TestSecretSyncNeverCopiesTheManagersOwnSecrets(t *testing.T) {
	skipIfNamespaced(t, "SecretSync")

	managersNamespace := features.New("an admin's SecretSync whose source is the manager's namespace").
		Assess("is refused at admission with a clear message, and past admission copies neither the ownership key nor the Helm release", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			const target, label, name = "e2e-own-ns-target", "e2e.platform-operators.io/own-ns", "e2e-own-namespace"
			createNamespace(ctx, t, c, target, map[string]string{label: "yes"})
			ss := func() *v1alpha1.SecretSync {
				return &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.SecretSyncSpec{
					Source: v1alpha1.SecretSyncSource{Namespace: releaseNamespace, Selector: &metav1.LabelSelector{}},
					Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "yes"}}},
				}}
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), ss()) })
			err := c.Create(ctx, ss())
			admitted := err == nil
			switch {
			case admitted:
				t.Errorf("a SecretSync of source namespace %s (the manager's) was admitted: want it refused at admission", releaseNamespace)
			case !refusedByAdmission(err):
				t.Fatal(err)
			case !strings.Contains(err.Error(), releaseNamespace) && !strings.Contains(strings.ToLower(err.Error()), "manager"):
				t.Errorf("the refusal does not say why (naming %s or the manager): %v", releaseNamespace, err)
			default:
				t.Logf("refused at admission: %v", err)
			}
			// Past admission (a policy a cluster may not have, or a values switch that allows a
			// namespace): the manager itself never copies its own secrets.
			if !admitted {
				if m := vapBinding.FindStringSubmatch(err.Error()); m != nil {
					unbindForTheTest(ctx, t, c, m[1])
					// The SecretSync goes before the binding is restored (cleanups run last
					// first): its deletion must not meet the policy.
					t.Cleanup(func() { deleteAndWait(t, c, ss()) })
					eventually(ctx, t, "the SecretSync, with the policy unbound", func(ctx context.Context) error { return c.Create(ctx, ss()) })
					admitted = true
				} else {
					t.Logf("refused by the CRD's schema, which no cluster lacks: the manager's own filter is asserted by the next feature")
				}
			}
			if admitted {
				syncedOnce(ctx, t, c, name)
			}
			// Unconditionally: none of the manager's secrets is in the target namespace.
			neverOwnSecretsIn(ctx, t, c, target, ownSecretsWatch)
			managerHealthy(ctx, t, cfg)
			return ctx
		}).Feature()

	ownTypes := features.New("a SecretSync of every Secret of a namespace holding a Helm release and a ServiceAccount token").
		Assess("copies the rest but never a Secret of type helm.sh/release.v1 or kubernetes.io/service-account-token", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctrlClient(t, cfg)
			const src, target, label, name = "e2e-own-types-src", "e2e-own-types-target", "e2e.platform-operators.io/own-types", "e2e-own-types"
			createNamespace(ctx, t, c, src, nil)
			createNamespace(ctx, t, c, target, map[string]string{label: "yes"})
			robot := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "robot"}}
			if err := c.Create(ctx, robot); err != nil {
				t.Fatal(err)
			}
			for _, s := range []*corev1.Secret{
				{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "canary"}, Data: map[string][]byte{"token": []byte("copy me")}},
				// What `helm install` writes (a release of another chart in the source namespace).
				{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "sh.helm.release.v1.e2e.v1", Labels: map[string]string{"owner": "helm", "name": "e2e"}},
					Type: helmReleaseType, Data: map[string][]byte{"release": []byte("H4sIAAAAAAAA")}},
				// A long-lived token Secret; kube-controller-manager fills in the token.
				{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "robot-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "robot"}},
					Type: corev1.SecretTypeServiceAccountToken},
			} {
				if err := c.Create(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			eventually(ctx, t, "the token controller fills the token", func(ctx context.Context) error {
				s := &corev1.Secret{}
				if err := c.Get(ctx, types.NamespacedName{Namespace: src, Name: "robot-token"}, s); err != nil {
					return err
				}
				if len(s.Data[corev1.ServiceAccountTokenKey]) == 0 {
					return fmt.Errorf("no token yet")
				}
				return nil
			})
			ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Namespace: src, Selector: &metav1.LabelSelector{}},
				Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{label: "yes"}}},
			}}
			if err := c.Create(ctx, ss); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), ss) })
			eventually(ctx, t, "the canary is copied", func(ctx context.Context) error {
				return copyIs(ctx, c, target, "canary", map[string][]byte{"token": []byte("copy me")})
			})
			neverOwnSecretsIn(ctx, t, c, target, ownSecretsWatch/2)
			managerHealthy(ctx, t, cfg)
			return ctx
		}).Feature()

	testenv.Test(t, managersNamespace, ownTypes)
}
