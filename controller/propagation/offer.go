package propagation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// Offered reports whether src (a Secret or a ConfigMap's envelope) is offered to namespace: its
// owner set keys.LabelOffer "true" and keys.AnnotationOfferNamespaces lists the namespace, by name or glob.
// Both are needed: the label makes the offer visible to the manager's cache, the annotation
// says to whom. A source being deleted is offered to nobody, and so is a copy (it carries
// keys.LabelSecretSync or keys.LabelCopyRequest): whoever received a copy may not pass it on,
// past the namespaces its SecretSync or offer chose.
func Offered(src *corev1.Secret, namespace string) bool {
	if src == nil || src.DeletionTimestamp != nil || src.Labels[keys.LabelOffer] != "true" || IsCopy(src) {
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

// IsCopy reports whether s carries the label of a copy (a SecretSync's or a CopyRequest's), with
// any value.
func IsCopy(s *corev1.Secret) bool {
	_, bySync := s.Labels[keys.LabelSecretSync]
	_, byRequest := s.Labels[keys.LabelCopyRequest]
	return bySync || byRequest
}

// MayBeOffered is Offered for src as a cache's bounded form holds it (Bounded): also true when its
// list of namespaces was too long to keep, and only the live object can tell.
func MayBeOffered(src *corev1.Secret, namespace string) bool {
	return Offered(src, namespace) || src != nil && src.DeletionTimestamp == nil && src.Labels[keys.LabelOffer] == "true" && !IsCopy(src) &&
		strings.HasPrefix(src.Annotations[keys.AnnotationOfferNamespaces], digestedPrefix)
}
