package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operators/platform-operators/controller/permissions"
	"github.com/platform-operators/platform-operators/controller/podwatcher"
	"github.com/platform-operators/platform-operators/controller/secretsync"
)

// checkWatchNamespaces refuses what cannot work when the manager is limited to some namespaces:
// SecretSync is cluster-scoped (it lists namespaces and copies Secrets across them), and the pod
// watcher cannot watch a namespace outside the list.
func checkWatchNamespaces(watch, enabled, podWatcherNamespaces []string) error {
	if len(watch) == 0 {
		return nil
	}
	if slices.Contains(enabled, secretsync.Name) {
		return fmt.Errorf("--watch-namespaces cannot be used with the %s controller, which is cluster-scoped: "+
			"add -%s to --controllers (chart: secretSync.enabled=false), or watch all namespaces", secretsync.Name, secretsync.Name)
	}
	if slices.Contains(enabled, podwatcher.Name) {
		for _, ns := range podWatcherNamespaces {
			if !slices.Contains(watch, ns) {
				return fmt.Errorf("--podwatcher-namespaces holds %q, which is not in --watch-namespaces", ns)
			}
		}
	}
	return nil
}

// addPermissionCheck starts the RBAC self-check and makes /readyz fail while a permission
// the enabled controllers need is missing (each one is logged as an error).
func addPermissionCheck(ctx context.Context, mgr ctrl.Manager, enabled, watch, podWatcherNamespaces []string, log logr.Logger) error {
	namespaces := make(map[string][]string, len(enabled))
	for _, name := range enabled {
		namespaces[name] = watch
		if name == podwatcher.Name && len(podWatcherNamespaces) > 0 {
			namespaces[name] = podWatcherNamespaces
		}
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	checker := &permissions.Checker{
		Reviews: cs.AuthorizationV1().SelfSubjectAccessReviews(),
		Checks:  permissions.Expand(namespaces),
		Log:     log.WithName("permissions"),
	}
	// Not a manager runnable: those start only after the caches synced, and a cache cannot sync
	// without the permissions this reports on.
	go func() { _ = checker.Start(ctx) }()
	return mgr.AddReadyzCheck("permissions", func(*http.Request) error { return checker.Ready() })
}
