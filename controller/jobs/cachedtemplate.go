package jobs

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/digest"
	"github.com/platform-operators/platform-operators/controller/statuswrite"
)

// The owners of our Jobs (an At, a ScheduledJob) are cached in a bounded form: a tenant may write
// a jobTemplate (or an At's command) of nearly the API server's 1.5 MiB, and 100 of them took the
// manager to its memory limit. Their caches keep what decide reads and the template only up to
// MaxCachedTemplate; a larger one is kept as its digest, and the pass that creates a Job reads the
// whole object from the API.

// TemplateDigest is the annotation a cache puts, in place of a job template it dropped, on an At
// or a ScheduledJob: the digest (digest.Of) of what it dropped. The ':' makes it a key the API
// server refuses, so no object from the API carries it: a tenant cannot forge the mark.
const TemplateDigest = keys.Prefix + "cached:template-digest"

// MaxCachedTemplate is the size (serialized) above which a cache keeps a job template as its
// digest.
const MaxCachedTemplate = 4 << 10

// TemplateDropped reports whether the cache dropped the job template of an object it holds.
func TemplateDropped(m metav1.Object) bool {
	_, ok := m.GetAnnotations()[TemplateDigest]
	return ok
}

// BoundedOwner is the cache transform of an owner of our Jobs: slim is the owner's cached form
// (its metadata bounded; spec and status kept, as decide reads them), and run, what of its spec
// only its Jobs are built from, stays in it only when it serializes to at most MaxCachedTemplate;
// a larger one is marked by its digest, and drop removes it from the cached form. It is
// idempotent.
func BoundedOwner[T metav1.Object](slim func(T) T, run func(T) any, drop func(T)) func(any) (any, error) {
	return func(obj any) (any, error) {
		o, ok := obj.(T)
		if !ok || TemplateDropped(o) {
			return obj, nil
		}
		out := slim(o)
		b, err := json.Marshal(run(o))
		if err != nil || len(b) <= MaxCachedTemplate {
			return out, err
		}
		if out.GetAnnotations() == nil {
			out.SetAnnotations(map[string]string{})
		}
		out.GetAnnotations()[TemplateDigest] = digest.Of(b)
		drop(out)
		return out, nil
	}
}

// ReadyToCreate reports whether a pass may create cached's Jobs: the slot protocol's claim
// needs cached to be the version the API server has (confirmed.Current: the status it read may
// predate another process's record), and a template the cache dropped is put back (restore
// copies it from live, the object read from the API server, which is read at most once for both
// questions). False without an error: look again after Recheck (or the newer version's watch
// event).
func ReadyToCreate[T client.Object](ctx context.Context, api client.Reader, confirmed *statuswrite.Confirmations, cached, live T, restore func(live T)) (bool, error) {
	current, err := confirmed.Current(ctx, api, cached, live)
	if err != nil || !current || !TemplateDropped(cached) {
		return current, err
	}
	return WithTemplate(ctx, api, cached, live, restore)
}

// WithTemplate puts back into cached, an owner read from the cache with its template dropped
// (BoundedOwner), what the cache dropped, read from the API server into live (an object of
// its type: empty, or the one Current just read into, which is not read again): restore copies it
// from live into cached. It reports false when the API server's object is not the cached one's
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
	delete(cached.GetAnnotations(), TemplateDigest)
	return true, nil
}
