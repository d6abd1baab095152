package propagation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// Offered reports whether src (a Secret or a ConfigMap's envelope) is offered to namespace: its
// owner set keys.LabelOffer "true" and keys.AnnotationOfferNamespaces lists the namespace, by name or glob.
// Both are needed: the label makes the offer visible to the manager's cache, the annotation
// says to whom. A source being deleted is offered to nobody.
func Offered(src *corev1.Secret, namespace string) bool {
	if src == nil || src.DeletionTimestamp != nil || src.Labels[keys.LabelOffer] != "true" {
		return false
	}
	var patterns []string
	for _, p := range strings.Split(src.Annotations[keys.AnnotationOfferNamespaces], ",") {
		if p = strings.TrimSpace(p); p != "" {
			patterns = append(patterns, p)
		}
	}
	return MatchesAny(patterns, namespace)
}

// Requested is the copy of src that a CopyRequest named request asks for in namespace, under
// name: Desired's data, type and immutability, marked with keys.LabelCopyRequest instead of
// keys.LabelSecretSync. Nothing of the source's metadata travels, the offer included.
func Requested(src *corev1.Secret, namespace, name, request string) *corev1.Secret {
	cp := Desired(src, namespace, "")
	cp.Name = name
	delete(cp.Labels, keys.LabelSecretSync)
	cp.Labels[keys.LabelCopyRequest] = request
	return cp
}
