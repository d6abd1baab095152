package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/platform-operators/platform-operators/controller/permissions"
	"github.com/platform-operators/platform-operators/controller/podwatcher"
	"github.com/platform-operators/platform-operators/controller/secretsync"
)

// checkWatchNamespaces refuses what cannot work when the manager is limited to some namespaces:
// the pod watcher cannot watch a namespace outside the list, and the SecretSyncs the manager
// keeps applied (sources: their source namespaces) could never read a source outside it.
func checkWatchNamespaces(watch, enabled, podWatcherNamespaces, sources []string) error {
	if len(watch) == 0 {
		return nil
	}
	unwatched := func(ns string) bool { return !slices.Contains(watch, ns) }
	if i := slices.IndexFunc(sources, unwatched); i >= 0 && slices.Contains(enabled, secretsync.Name) {
		return fmt.Errorf("the default SecretSync's source namespace %q is not in --watch-namespaces (chart: rbac.namespaces gets the source namespaces added)", sources[i])
	}
	if i := slices.IndexFunc(podWatcherNamespaces, unwatched); i >= 0 && slices.Contains(enabled, podwatcher.Name) {
		return fmt.Errorf("--podwatcher-namespaces holds %q, which is not in --watch-namespaces", podWatcherNamespaces[i])
	}
	return nil
}

// permissionCheck starts the RBAC self-check and returns the /readyz check that fails while a
// permission the enabled controllers need is missing (each one is logged as an error).
func permissionCheck(ctx context.Context, mgr ctrl.Manager, enabled, watch, podWatcherNamespaces []string, log logr.Logger) (healthz.Checker, error) {
	namespaces := checkNamespaces(enabled, watch, podWatcherNamespaces)
	byController, err := permissions.ByController(scopeFunc(mgr.GetRESTMapper(), namespaces))
	if err != nil {
		return nil, fmt.Errorf("reading the generated RBAC roles: %w", err)
	}
	if len(watch) > 0 {
		byController[secretsync.Name] = withoutNamespaceReads(byController[secretsync.Name])
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	checker := &permissions.Checker{
		Reviews: cs.AuthorizationV1().SelfSubjectAccessReviews(),
		Checks:  permissions.Expand(byController, namespaces),
		Log:     log.WithName("permissions"),
	}
	// Not a manager runnable: those start only after the caches synced, and a cache cannot sync
	// without the permissions this reports on.
	go func() { _ = checker.Start(ctx) }()
	return func(*http.Request) error { return checker.Ready() }, nil
}

// withoutNamespaceReads is SecretSync's needs without reading Namespaces: limited to namespaces,
// it reads none (secretsync.Reconciler.Namespaces), and no Role could grant it.
func withoutNamespaceReads(needs []permissions.Need) []permissions.Need {
	return slices.DeleteFunc(slices.Clone(needs), func(n permissions.Need) bool {
		return n.Group == "" && n.Resource == "namespaces"
	})
}

// checkNamespaces maps each enabled controller, and the manager's own needs (Events, which every
// controller that runs may record), to the namespaces it works in (nil: all).
func checkNamespaces(enabled, watch, podWatcherNamespaces []string) map[string][]string {
	namespaces := make(map[string][]string, len(enabled)+1)
	for _, name := range enabled {
		namespaces[name] = watch
		if name == podwatcher.Name && len(podWatcherNamespaces) > 0 {
			namespaces[name] = podWatcherNamespaces
		}
	}
	if len(enabled) > 0 {
		namespaces[permissions.Manager] = watch
	}
	return namespaces
}

// scopeFunc asks the API server's discovery (through the manager's RESTMapper) whether a resource
// lives in namespaces. Only a manager limited to some namespaces needs to know: watching all, every
// check is asked without a namespace, so no discovery is done.
func scopeFunc(mapper meta.RESTMapper, namespaces map[string][]string) permissions.ScopeFunc {
	for _, nss := range namespaces {
		if len(nss) > 0 {
			return func(group, resource string) (bool, error) {
				gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: group, Resource: resource})
				if err != nil {
					return false, err
				}
				return apiutil.IsGVKNamespaced(gvk, mapper)
			}
		}
	}
	return func(string, string) (bool, error) { return true, nil }
}
