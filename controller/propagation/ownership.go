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

// Prover makes and checks ownership proofs under a ring of keys: it signs with the newest and
// accepts a proof under any of them, so a new key can be added (and the old one retired once
// every copy carries a proof of the new one) without stranding a copy. A copy whose proof is
// under an older key is proven, and out of step (its proof annotation is not the one the newest
// key gives): the next pass re-signs it with one update.
type Prover struct{ keys [][]byte }

// NewProver returns a Prover for keys (each at least 32 bytes of randomness), oldest first: it
// signs with the last. There must be at least one.
func NewProver(keys ...[]byte) *Prover {
	p := &Prover{}
	for _, k := range keys {
		p.keys = append(p.keys, append([]byte(nil), k...))
	}
	return p
}

// Sign returns the proof of a copy of kind ("Secret" or "ConfigMap") at namespace/name, owned by
// the owner named name under label, under the newest key.
func (p *Prover) Sign(kind, namespace, name, label, owner string) string {
	return sign(p.keys[len(p.keys)-1], kind, namespace, name, label, owner)
}

func sign(key []byte, kind, namespace, name, label, owner string) string {
	mac := hmac.New(sha256.New, key)
	for _, f := range []string{kind, namespace, name, label, owner} {
		// NUL separates fields: no Kubernetes name or label value contains it.
		mac.Write([]byte(f))
		mac.Write([]byte{0})
	}
	return proofVersion + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Proven reports whether s (a Secret or an envelope, live or a cache's bounded form) carries a
// valid proof, under any key of the ring, for the owner its label names.
func (p *Prover) Proven(s *corev1.Secret, label string) bool {
	owner, ok := s.Labels[label]
	if !ok {
		return false
	}
	got := []byte(s.Annotations[keys.AnnotationOwnership])
	for _, k := range p.keys {
		if hmac.Equal(got, []byte(sign(k, KindName(s), s.Namespace, s.Name, label, owner))) {
			return true
		}
	}
	return false
}

// Prove sets on want, a desired copy, its proof for owner.
func (p *Prover) Prove(want *corev1.Secret, owner Owner) {
	want.Annotations[keys.AnnotationOwnership] = p.Sign(KindName(want), want.Namespace, want.Name, owner.Label, owner.Name)
}
