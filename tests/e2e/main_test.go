// Package e2e is the end-to-end suite: the chart installed into a real cluster and the manager
// running as the chart's ServiceAccount. E2E_PROVIDER picks the cluster: "kwok" (default; real
// control plane from bin/, manager as a local process) or "kind" (needs Docker; the image is built,
// loaded and runs in-cluster).
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

const (
	releaseName      = "platform-operators"
	releaseNamespace = "platform-operators-system"
	// podWatcherNamespace is the one namespace the suite's pod watcher watches.
	podWatcherNamespace = "e2e-podwatcher"
)

var (
	testenv env.Environment
	bed     provider
	root    = repoRoot()
)

// provider is what differs between running the manager next to a kwok cluster and inside kind.
type provider interface {
	// Setup are the steps that create the cluster, install the chart with values and start the
	// manager (kind: envfuncs.CreateClusterWithConfig and envfuncs.LoadImageToCluster among them);
	// Finish those that stop and delete what they made (kind: envfuncs.DestroyCluster).
	Setup(values map[string]any) []env.Func
	Finish() []env.Func
	// ExportLogs writes cluster and manager logs into dir.
	ExportLogs(ctx context.Context, cfg *envconf.Config, dir string) error
	// ManagerLogs and ManagerMetrics read the running manager's log and /metrics text.
	ManagerLogs(ctx context.Context, cfg *envconf.Config) (string, error)
	ManagerMetrics(ctx context.Context, cfg *envconf.Config) (string, error)
	// ManagerReady reports whether the manager answers /readyz (kwok) or its pod is Ready (kind).
	ManagerReady(ctx context.Context, cfg *envconf.Config) (bool, error)
	// LeaseHolderPrefix is how the leader lease's holderIdentity of our manager begins.
	LeaseHolderPrefix(ctx context.Context, cfg *envconf.Config) (string, error)
}

// valueOverrides are what the provider changes in the suite's values (kind: the registry, its
// images and pull secret); suiteValues applies them, so a test that installs again gets the
// values the suite was installed with.
var valueOverrides []func(map[string]any)

// suiteValues are the chart values every provider installs with.
func suiteValues() map[string]any {
	v := baseValues()
	for _, o := range valueOverrides {
		o(v)
	}
	return v
}

func baseValues() map[string]any {
	v := map[string]any{
		"crds":       map[string]any{"keep": false},
		"logging":    map[string]any{"format": "json", "level": "info"},
		"podWatcher": map[string]any{"enabled": true, "namespaces": []any{podWatcherNamespace}},
		// The platform pieces (storage_test.go, pullsecret_test.go): an EFS class without the CSI
		// driver, and a Harbor robot pull secret spread to every namespace.
		"storageClass": map[string]any{"enabled": true, "name": e2eStorageClass, "parameters": map[string]any{"fileSystemId": e2eFileSystemID}},
		"pullSecret": map[string]any{"create": true, "name": e2ePullSecret, "registry": e2eRegistry,
			"username": e2eRobot, "password": e2eRobotSecret, "sync": map[string]any{"enabled": true}},
		// A tenant (tenant_test.go): namespace (Pod Security restricted), ServiceAccount, Role,
		// RoleBinding and the token Secret it asks for (off by default: it never expires).
		"tenants": []any{map[string]any{"namespace": tenantNamespace, "tokenSecret": true}},
		// Namespace admins get CopyRequests (copies_test.go).
		"rbac": map[string]any{"aggregateToDefaultRoles": true},
		// A Job whose pods are refused is reported within a wait (hostile_scheduling_test.go).
		"jobs": map[string]any{"podsStuckAfter": suitePodsStuckAfter.String()},
	}
	if namespacedMode() {
		// The manager only in the namespaces the suite's namespaced features use, SecretSync on:
		// the chart adds the source namespace (secretsync, where the pull secret lives too).
		v["rbac"] = map[string]any{"scope": "namespaced", "namespaces": namespacedModeNamespaces()}
	}
	return v
}

// namespacedMode is E2E_RBAC_SCOPE=namespaced: the chart is installed with rbac.scope=namespaced.
func namespacedMode() bool { return os.Getenv("E2E_RBAC_SCOPE") == "namespaced" }

// namespacedModeNamespaces are the namespaces the manager works in when namespacedMode: those of
// the features that need the manager. The provider creates them before the install (the chart's
// Roles go into them) and withNamespace accepts that they exist.
func namespacedModeNamespaces() []any {
	return []any{podWatcherNamespace, atNamespace, schedulingNamespace, pullSecretNS, nsModeTarget}
}

// skipIfNamespaced skips, in namespaced mode, a SecretSync test whose targets are namespaces it
// creates (and selects by label) after the install: they are not in rbac.namespaces, so the
// manager may not write there. TestSecretSyncInNamespacedMode and TestPullSecret cover SecretSync
// in that mode.
func skipIfNamespaced(t *testing.T, feature string) {
	t.Helper()
	if namespacedMode() {
		t.Skipf("E2E_RBAC_SCOPE=namespaced: this %s test targets namespaces it creates, outside rbac.namespaces (TestSecretSyncInNamespacedMode covers SecretSync there)", feature)
	}
}

func TestMain(m *testing.M) {
	cfg, err := envconf.NewFromFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	provider := os.Getenv("E2E_PROVIDER")
	switch provider {
	case "", "kwok":
		bed, provider = &kwokProvider{}, "kwok"
	case "kind":
		if bed, err = newKindProvider(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	default:
		fmt.Fprintf(os.Stderr, "E2E_PROVIDER must be kwok or kind, not %q\n", provider)
		os.Exit(2)
	}
	if s := os.Getenv("E2E_RBAC_SCOPE"); s != "" && s != "cluster" && s != "namespaced" {
		fmt.Fprintf(os.Stderr, "E2E_RBAC_SCOPE must be cluster or namespaced, not %q\n", s)
		os.Exit(2)
	}
	testenv = env.NewWithConfig(cfg)
	testenv.Setup(bed.Setup(suiteValues())...)
	// Keep what a failure needs for diagnosis: cluster component logs and the manager's log, under
	// the provider's name (make test runs the kwok and the kind suite at the same time).
	testenv.AfterEachTest(func(ctx context.Context, cfg *envconf.Config, t *testing.T) (context.Context, error) {
		if t.Failed() {
			dir := filepath.Join(root, "tests", "e2e", "_artifacts", provider, t.Name())
			if err := bed.ExportLogs(ctx, cfg, dir); err != nil {
				t.Logf("exporting logs: %v", err)
			} else {
				t.Logf("cluster and manager logs exported to %s", dir)
			}
		}
		return ctx, nil
	})
	// One Finish action per step: e2e-framework stops an action at its first failing func, so a
	// DestroyCluster that finds no cluster (Setup failed before it) would skip the registry's stop.
	for _, f := range bed.Finish() {
		testenv.Finish(f)
	}
	code := testenv.Run(m)
	if managerBin != "" { // buildManagerOnce's temporary directory (48 MiB a run)
		_ = os.RemoveAll(filepath.Dir(managerBin))
	}
	os.Exit(code)
}

// isKind is true when the suite runs on real nodes.
func isKind() bool { _, ok := bed.(*kindProvider); return ok }

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// poll is the interval and timeout assessments wait with.
const (
	pollInterval = 250 * time.Millisecond
	waitTimeout  = 60 * time.Second
)
