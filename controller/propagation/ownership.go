package propagation

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"

	corev1 "k8s.io/api/core/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// Anyone who may label an object in a namespace can put our label on it, so the label alone
// does not say that the manager made the object. The ownership proof does
// (keys.AnnotationOwnership): an HMAC-SHA256 of what the copy is (kind, namespace, name) and of
// whose it is (the owner's label and name), under a key only the manager reads (a Secret in its
// own namespace). A tenant can copy a proof, but a proof is valid only for the object it was made
// for: moved to another name, namespace or owner it no longer verifies.

// proofVersion starts every proof, so that another scheme could be told apart.
const proofVersion = "v1:"

// Prover makes and checks ownership proofs under one key.
type Prover struct{ key []byte }

// NewProver returns a Prover for key (at least 32 bytes of randomness).
func NewProver(key []byte) *Prover { return &Prover{key: append([]byte(nil), key...)} }

// Sign returns the proof of a copy of kind ("Secret" or "ConfigMap") at namespace/name, owned by
// the owner named name under label.
func (p *Prover) Sign(kind, namespace, name, label, owner string) string {
	mac := hmac.New(sha256.New, p.key)
	for _, f := range []string{kind, namespace, name, label, owner} {
		// NUL separates fields: no Kubernetes name or label value contains it.
		mac.Write([]byte(f))
		mac.Write([]byte{0})
	}
	return proofVersion + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Proven reports whether s (a Secret or an envelope, live or a cache's bounded form) carries a
// valid proof for the owner its label names.
func (p *Prover) Proven(s *corev1.Secret, label string) bool {
	owner, ok := s.Labels[label]
	if !ok {
		return false
	}
	want := p.Sign(KindName(s), s.Namespace, s.Name, label, owner)
	return hmac.Equal([]byte(s.Annotations[keys.AnnotationOwnership]), []byte(want))
}

// Prove sets on want, a desired copy, its proof for owner.
func (p *Prover) Prove(want *corev1.Secret, owner Owner) {
	want.Annotations[keys.AnnotationOwnership] = p.Sign(KindName(want), want.Namespace, want.Name, owner.Label, owner.Name)
}
