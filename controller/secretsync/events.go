package secretsync

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
)

// InNamespace returns a recorder that records the Events of cluster-scoped objects (a
// SecretSync) in namespace, the manager's own, rather than in default, where client-go puts
// them and where anyone allowed to read Events there would learn the tenants' namespaces that
// SecretSync messages name. The Event's regarding reference carries that namespace (the API
// requires an Event to be in its object's namespace, or default for a cluster-scoped one), so
// `kubectl get events -n <manager's namespace>` lists them; kubectl describe of the SecretSync
// does not. Events of namespaced objects are recorded as r records them. An empty namespace
// returns r.
func InNamespace(r events.EventRecorder, scheme *runtime.Scheme, namespace string) events.EventRecorder {
	if namespace == "" {
		return r
	}
	return namespacedRecorder{r: r, scheme: scheme, namespace: namespace}
}

type namespacedRecorder struct {
	r         events.EventRecorder
	scheme    *runtime.Scheme
	namespace string
}

func (n namespacedRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if m, err := meta.Accessor(regarding); err == nil && m.GetNamespace() == "" {
		if ref, err := reference.GetReference(n.scheme, regarding); err == nil {
			ref = ref.DeepCopy()
			ref.Namespace = n.namespace
			regarding = ref
		}
	}
	n.r.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
