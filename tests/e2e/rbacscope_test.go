package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

// noRBACNamespace holds a ServiceAccount nothing grants anything to.
const noRBACNamespace = "e2e-norbac"

func TestManagerPermissions(t *testing.T) {
	granted := features.New("the chart grants the manager every permission its controllers need").
		Assess("the startup check logs that all permissions are granted and none is missing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			eventually(ctx, t, "the permission check's result in the manager log", func(ctx context.Context) error {
				log, err := bed.ManagerLogs(ctx, cfg)
				if err != nil {
					return err
				}
				for _, l := range parseLogLines(log) {
					if strings.HasPrefix(l.Msg, "Missing RBAC permission") {
						t.Fatalf("the chart's manager logs a missing permission:\n%s", log)
					}
				}
				if !strings.Contains(log, "RBAC permissions checked: all granted") {
					return fmt.Errorf("not logged yet")
				}
				return nil
			})
			return ctx
		}).Feature()

	// A second manager process, as a ServiceAccount bound to nothing: it must say what it lacks.
	missingB := features.New("a manager that lacks permissions names each one and is not ready")
	missingB = withNamespace(missingB, noRBACNamespace)
	missing := missingB.Assess("the log names the missing permission and /readyz fails", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		if _, ok := bed.(*kwokProvider); !ok {
			t.Skip("needs the manager as a local process (kwok provider)")
		}
		admin, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: noRBACNamespace, Name: "nobody"}}
		if _, err := admin.CoreV1().ServiceAccounts(noRBACNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		kc, err := testbed.ServiceAccountKubeconfig(ctx, admin, cfg.Client().RESTConfig(), noRBACNamespace, sa.Name, 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		kubeconfig := filepath.Join(dir, "kubeconfig")
		if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
			t.Fatal(err)
		}
		bin := buildManagerOnce(ctx, t)
		spec := testbed.ManagerSpec{Args: []string{"--leader-elect=false", "--controllers=-secretsync,-podwatcher,at",
			"--watch-namespaces=" + noRBACNamespace, "--log-format=json", "--log-level=info"}}
		m, err := testbed.StartManager(bin, spec, kubeconfig, filepath.Join(dir, "manager.log"), testbed.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Stop(5 * time.Second); _ = m.Cmd.Wait() })
		want := "list ats.ops.platform-operators.io in namespace " + noRBACNamespace
		eventually(ctx, t, "the missing permission in the log", func(ctx context.Context) error {
			b, err := os.ReadFile(m.LogPath)
			if err != nil {
				return err
			}
			if !strings.Contains(string(b), `"msg":"Missing RBAC permission`) || !strings.Contains(string(b), want) {
				return fmt.Errorf("no line naming %q yet:\n%s", want, b)
			}
			return nil
		})
		body, err := testbed.HTTPGet(ctx, "http://"+m.ProbeAddr+"/readyz?verbose")
		if err == nil {
			t.Fatalf("/readyz answers OK for a manager without permissions:\n%s", body)
		}
		if !strings.Contains(body, "permissions failed") {
			t.Errorf("/readyz?verbose = %q, want the permissions check to fail", body)
		}
		return ctx
	}).Feature()

	// In namespaced mode the chart grants nothing cluster-wide but SecretSyncs (a cluster-scoped kind).
	scoped := features.New("with rbac.scope=namespaced the manager can act only in its namespaces").
		Assess("there is no ClusterRoleBinding and the manager's ServiceAccount is Forbidden elsewhere", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !namespacedMode() {
				t.Skip("E2E_RBAC_SCOPE is not namespaced")
			}
			crb := &rbacv1.ClusterRoleBinding{}
			if err := cfg.Client().Resources().Get(ctx, releaseName+"-manager", "", crb); !apierrors.IsNotFound(err) {
				t.Fatalf("ClusterRoleBinding %s-manager: err = %v, want NotFound", releaseName, err)
			}
			sa, err := kubernetes.NewForConfig(serviceAccountConfig(ctx, t, cfg, releaseNamespace, managerServiceAccount(ctx, t, cfg)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sa.BatchV1().Jobs(atNamespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				t.Errorf("listing Jobs in %s, which the chart grants: %v", atNamespace, err)
			}
			for _, ns := range []string{"default", tenantNamespace} {
				if _, err := sa.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
					t.Errorf("listing Jobs in %s: err = %v, want Forbidden", ns, err)
				}
			}
			if _, err := sa.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
				t.Errorf("listing namespaces: err = %v, want Forbidden", err)
			}
			// SecretSync: Secrets in the listed namespaces and the source namespace only.
			for _, ns := range []string{nsModeTarget, "secretsync"} {
				if _, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
					t.Errorf("listing Secrets in %s, which the chart grants: %v", ns, err)
				}
			}
			for _, ns := range []string{"default", tenantNamespace} {
				if _, err := sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
					t.Errorf("listing Secrets in %s: err = %v, want Forbidden", ns, err)
				}
			}
			return ctx
		}).Feature()

	testenv.Test(t, granted, missing, scoped)
}
