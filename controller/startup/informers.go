package startup

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// InformersSynced is a readiness check that passes once a fixed list of informers has synced,
// and from then on for good (a latch). Informers a controller starts later, on first use, are
// not part of it: a replica that was ready stays ready while such an informer syncs, instead of
// flapping as a check over every informer of the cache (WaitForCacheSync) does.
type InformersSynced struct {
	kinds     []string
	hasSynced []func() bool
	synced    atomic.Bool
}

// WarmInformers asks informers (the manager's cache) for one informer per object, before the
// manager starts. Informers requested before the start are started with the cache, and the
// manager waits for the cache to sync before it starts its leader election; so a replica
// campaigns for the lease only with these informers synced, and a standby keeps them warm.
// The returned check reports when they have synced.
func WarmInformers(ctx context.Context, informers cache.Informers, scheme *runtime.Scheme, objs []client.Object) (*InformersSynced, error) {
	s := &InformersSynced{}
	seen := map[schema.GroupVersionKind]bool{}
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, err
		}
		// Controllers share kinds (At and ScheduledJob both own Jobs): one informer each.
		if seen[gvk] {
			continue
		}
		seen[gvk] = true
		// Before the start the call only registers the informer; it never blocks.
		inf, err := informers.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, fmt.Errorf("requesting the %s informer: %w", gvk.Kind, err)
		}
		s.kinds = append(s.kinds, gvk.Kind)
		s.hasSynced = append(s.hasSynced, inf.HasSynced)
	}
	return s, nil
}

// Check is a healthz.Checker: nil once every informer has synced, else an error naming those
// still syncing ("informers not synced: 2/4 synced; waiting for Secret, ServiceAccount").
func (s *InformersSynced) Check(*http.Request) error {
	if s.synced.Load() {
		return nil
	}
	var waiting []string
	for i, hasSynced := range s.hasSynced {
		if !hasSynced() {
			waiting = append(waiting, s.kinds[i])
		}
	}
	if len(waiting) > 0 {
		return fmt.Errorf("informers not synced: %d/%d synced; waiting for %s", len(s.kinds)-len(waiting), len(s.kinds), strings.Join(waiting, ", "))
	}
	s.synced.Store(true)
	return nil
}
