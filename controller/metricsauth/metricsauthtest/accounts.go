// Package metricsauthtest sets up, on a real API server, the ServiceAccounts that tests of the
// metrics endpoint scrape with (the manager's own test and the tests module's comparison with
// controller-runtime's filter). Not linked into the manager.
package metricsauthtest

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Tokens of the two ServiceAccounts Accounts creates.
type Tokens struct{ Scraper, Nobody string }

// Accounts creates in ns the ServiceAccount "scraper", bound to the rule of the chart's
// metrics-reader ClusterRole (templates/metrics-rbac.yaml: GET /metrics), and "nobody", bound to
// nothing, and returns a token of each. RBAC answers from its informers' caches: it returns once a
// SubjectAccessReview allows the scraper, so that no first scrape is refused (and the refusal
// remembered by the manager's guard).
func Accounts(ctx context.Context, t testing.TB, cs kubernetes.Interface, ns string) Tokens {
	t.Helper()
	for _, name := range []string{"scraper", "nobody"} {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + ns + ":scraper", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}, metav1.CreateOptions{})
		lastErr = err
		return err == nil && sar.Status.Allowed, nil
	}); err != nil {
		t.Fatalf("the scraper's binding never took effect: %v (last review: %v)", err, lastErr)
	}
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	return Tokens{Scraper: token("scraper"), Nobody: token("nobody")}
}
