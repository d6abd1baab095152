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

// DropLargeTemplate reports whether run (what of an owner's spec only its Jobs are built from)
// serializes to more than MaxCachedTemplate; if so it marks m, the bounded metadata of the
// cached form, with its digest, and the caller drops run from that form.
func DropLargeTemplate(m *metav1.ObjectMeta, run any) (bool, error) {
	b, err := json.Marshal(run)
	if err != nil || len(b) <= MaxCachedTemplate {
		return false, err
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[TemplateDigest] = digest.Of(b)
	return true, nil
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
// (DropLargeTemplate), what the cache dropped, read from the API server into live (an object of
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
