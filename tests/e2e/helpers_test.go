package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

type nsKey string

// edit reads obj's live copy into obj, applies mutate and updates it, again after a conflict:
// the manager writes what the tests edit (a SecretSync's status, a copy) at any time.
func edit[T client.Object](ctx context.Context, c client.Client, obj T, mutate func(T)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return c.Update(ctx, obj)
	})
}

// withNamespace creates the named namespace before a feature and deletes it after, so each
// feature works in a namespace of its own.
func withNamespace(b *features.FeatureBuilder, name string) *features.FeatureBuilder {
	return b.
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			// In namespaced mode the provider created it before the install (it holds the chart's Role).
			if err := cfg.Client().Resources().Create(ctx, ns); err != nil && (!namespacedMode() || !apierrors.IsAlreadyExists(err)) {
				t.Fatalf("creating namespace %s: %v", name, err)
			}
			// On kind every pod pulls its image from the registry with the spread pull secret.
			waitPullSecret(ctx, t, cfg, name)
			return context.WithValue(ctx, nsKey(name), name)
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// In namespaced mode it holds the manager's Role: deleting it would take the Role while
			// the manager still handles the objects being deleted with it (Forbidden reconcile
			// errors the suite counts). The cluster goes at the end of the run anyway.
			if namespacedMode() && slices.Contains(namespacedModeNamespaces(), any(name)) {
				return ctx
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := cfg.Client().Resources().Delete(ctx, ns); err != nil {
				t.Logf("deleting namespace %s: %v", name, err)
			}
			return ctx
		})
}

// logLine is one JSON log line of the manager, with the fields the suite looks at.
type logLine struct {
	Msg      string `json:"msg"`
	Logger   string `json:"logger"`
	OldPhase string `json:"oldPhase"`
	NewPhase string `json:"newPhase"`
	Pod      struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"pod"`
}

// parseLogLines returns the JSON lines of a log, skipping anything else.
func parseLogLines(log string) []logLine {
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg != "" {
			out = append(out, l)
		}
	}
	return out
}

// metricValue finds a sample by its exact name{labels} text in Prometheus exposition output.
func metricValue(text, series string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// createRBACNamespaces creates the namespaces values["rbac"]["namespaces"] names (rbac.scope
// namespaced): the chart puts the manager's Roles into them, so they must exist before the install.
func createRBACNamespaces(ctx context.Context, cfg *envconf.Config, values map[string]any) error {
	rbac, _ := values["rbac"].(map[string]any)
	names, _ := rbac["namespaces"].([]any)
	if len(names) == 0 {
		return nil
	}
	cs, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return err
	}
	for _, n := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n.(string)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// serviceAccountConfig returns a REST config whose only credential is a fresh token of the
// ServiceAccount namespace/name (an admin client certificate beside it would win).
func serviceAccountConfig(ctx context.Context, t *testing.T, cfg *envconf.Config, namespace, name string) *rest.Config {
	t.Helper()
	admin, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	kc, err := testbed.ServiceAccountKubeconfig(ctx, admin, cfg.Client().RESTConfig(), namespace, name, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// managerServiceAccount is the ServiceAccount the installed chart runs the manager as.
func managerServiceAccount(ctx context.Context, t *testing.T, cfg *envconf.Config) string {
	t.Helper()
	admin, err := kubernetes.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	spec, err := testbed.ReadManagerSpec(ctx, admin, releaseNamespace, releaseName, "manager")
	if err != nil {
		t.Fatal(err)
	}
	return spec.ServiceAccount
}
