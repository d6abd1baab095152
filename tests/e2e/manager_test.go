package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

func TestManager(t *testing.T) {
	ready := features.New("the manager is ready and leads").
		Assess("the manager reports ready", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			err := wait.For(func(ctx context.Context) (bool, error) { return bed.ManagerReady(ctx, cfg) },
				wait.WithContext(ctx), wait.WithInterval(pollInterval), wait.WithTimeout(waitTimeout))
			if err != nil {
				t.Fatalf("manager never became ready: %v", err)
			}
			return ctx
		}).
		Assess("the manager holds the leader election lease", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			prefix, err := bed.LeaseHolderPrefix(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: releaseName, Namespace: releaseNamespace}}
			var holder string
			err = wait.For(func(ctx context.Context) (bool, error) {
				if err := cfg.Client().Resources().Get(ctx, lease.Name, lease.Namespace, lease); err != nil {
					return false, nil
				}
				holder = ""
				if lease.Spec.HolderIdentity != nil {
					holder = *lease.Spec.HolderIdentity
				}
				return strings.HasPrefix(holder, prefix) && lease.Spec.RenewTime != nil &&
					time.Since(lease.Spec.RenewTime.Time) < 30*time.Second, nil
			}, wait.WithContext(ctx), wait.WithInterval(pollInterval), wait.WithTimeout(waitTimeout))
			if err != nil {
				t.Fatalf("lease %s/%s not held by %q* (holder %q): %v", releaseNamespace, releaseName, prefix, holder, err)
			}
			return ctx
		}).Feature()

	identity := features.New("the manager runs as the chart's ServiceAccount").
		Assess("its credentials authenticate as the ServiceAccount and are bound by the chart's RBAC", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			saName := managerServiceAccount(ctx, t, cfg)
			sa, err := kubernetes.NewForConfig(serviceAccountConfig(ctx, t, cfg, releaseNamespace, saName))
			if err != nil {
				t.Fatal(err)
			}
			review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("self subject review: %v", err)
			}
			if want := "system:serviceaccount:" + releaseNamespace + ":" + saName; review.Status.UserInfo.Username != want {
				t.Fatalf("authenticated as %q, want %q", review.Status.UserInfo.Username, want)
			}
			// Granted by the chart: watching pods (pod watcher).
			if _, err := sa.CoreV1().Pods(podWatcherNamespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				t.Fatalf("listing pods, which the chart grants: %v", err)
			}
			// Not granted by the chart: Deployments (no controller reads them) and writing namespaces.
			_, err = sa.AppsV1().Deployments("kube-system").List(ctx, metav1.ListOptions{Limit: 1})
			if !apierrors.IsForbidden(err) {
				t.Fatalf("listing deployments in kube-system: err = %v, want Forbidden", err)
			}
			err = sa.CoreV1().Namespaces().Delete(ctx, "default", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsForbidden(err) {
				t.Fatalf("deleting a namespace: err = %v, want Forbidden", err)
			}
			return ctx
		}).Feature()

	testenv.Test(t, ready, identity)
}
