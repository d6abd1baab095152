package jobs

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WithTemplate puts back into cached, an owner read from the cache with its template dropped
// (DropLargeTemplate), what the cache dropped, read from the API server into live (an object of
// its type: empty, or the one Current just read into, which is not read again): restore copies it
// from live into cached. This is at most one extra GET of a pass that creates a Job. It reports false when the API server's object is not the cached one's
// generation (or not there): the spec changed since, and the watch event of the newer version
// starts a pass that decides on it.
func WithTemplate[T client.Object](ctx context.Context, api client.Reader, cached, live T, restore func(live T)) (bool, error) {
	if live.GetResourceVersion() == "" {
		if err := api.Get(ctx, client.ObjectKeyFromObject(cached), live); err != nil {
			return false, client.IgnoreNotFound(err)
		}
	}
	if live.GetUID() != cached.GetUID() || live.GetGeneration() != cached.GetGeneration() {
		return false, nil
	}
	restore(live)
	TemplateRestored(cached)
	return true, nil
}
