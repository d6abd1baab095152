package jobs

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/digest"
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

// TemplateRestored removes the mark from m, whose dropped template the caller has just put back
// from the object read from the API.
func TemplateRestored(m metav1.Object) {
	delete(m.GetAnnotations(), TemplateDigest)
}
