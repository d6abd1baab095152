package secretsync

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// Tests of issue 34: the ownership key is trusted only when it is the manager's, and it can be
// rotated without stranding a copy.

func TestTheOwnershipKeyIsTrustedOnlyWhenItIsTheManagers(t *testing.T) {
	key := []byte(strings.Repeat("k", ownershipKeyBytes))
	manager := func(name string, opts ...func(*corev1.Secret)) *corev1.Secret {
		s := NewOwnershipKeySecret(ownershipNS, name, key)
		for _, o := range opts {
			o(s)
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		s       *corev1.Secret
		trusted bool
		says    string
	}{
		{"the Secret the manager makes is trusted", manager("trust-own"), true, ""},
		{"the Opaque Secret versions before made (immutable, our labels) is trusted", manager("trust-legacy", func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), true, ""},
		{"a copy a SecretSync put at the key's place is not", manager("trust-copy", func(s *corev1.Secret) { s.Labels[keys.LabelSecretSync] = "admins-sync" }), false, "copy"},
		{"a Secret of another type is not", manager("trust-type", func(s *corev1.Secret) {
			s.Type = corev1.SecretTypeDockerConfigJson
			s.Data[corev1.DockerConfigJsonKey] = []byte("{}")
		}), false, "type"},
		{"a mutable Secret is not", manager("trust-mutable", func(s *corev1.Secret) { s.Immutable = nil }), false, "immutable"},
		{"a Secret without our labels is not", manager("trust-labels", func(s *corev1.Secret) { s.Labels = nil }), false, "labels"},
		{"a Secret with a short key is not", manager("trust-short", func(s *corev1.Secret) { s.Data[ownershipKeyField] = []byte("short") }), false, "bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			createSecret(t, tc.s)
			before := getSecret(t, ownershipNS, tc.s.Name)
			_, err := LoadOwnershipKey(context.Background(), k8s, ownershipNS, tc.s.Name)
			if tc.trusted && err != nil {
				t.Fatalf("LoadOwnershipKey: %v", err)
			}
			if !tc.trusted && (err == nil || !strings.Contains(err.Error(), tc.says)) {
				t.Fatalf("LoadOwnershipKey error = %v, want a refusal saying %q", err, tc.says)
			}
			// Never replaced, whatever it is.
			if after := getSecret(t, ownershipNS, tc.s.Name); after == nil || after.UID != before.UID {
				t.Errorf("the key Secret was replaced: %v", after)
			}
		})
	}
}

func TestTheOwnershipKeyRingSignsWithTheNewestAndAcceptsTheOlder(t *testing.T) {
	ctx := context.Background()
	const name = "ring-key"
	first, err := LoadOwnershipKey(ctx, k8s, ownershipNS, name)
	if err != nil {
		t.Fatal(err)
	}
	owner := propagation.SecretSyncOwner("s")
	signed := func(p *propagation.Prover) *corev1.Secret {
		s := makeSecret("team-a", "creds", withLabels(map[string]string{keys.LabelSecretSync: "s"}))
		s.Annotations = map[string]string{}
		p.Prove(s, owner)
		return s
	}
	old := signed(first)

	// Creation timestamps are whole seconds: the new key must be visibly newer.
	time.Sleep(1100 * time.Millisecond)
	newKey := []byte(strings.Repeat("n", ownershipKeyBytes))
	createSecret(t, NewOwnershipKeySecret(ownershipNS, name+"-2026-11", newKey))
	// A Secret named like a key but not the manager's is left out of the ring.
	time.Sleep(1100 * time.Millisecond)
	forgedKeys := [][]byte{[]byte(strings.Repeat("f", ownershipKeyBytes)), []byte(strings.Repeat("c", ownershipKeyBytes))}
	createSecret(t, makeSecret(ownershipNS, name+"-forged", immutable(), withData(map[string][]byte{ownershipKeyField: forgedKeys[0]})))
	forged := &corev1.Secret{}
	*forged = *NewOwnershipKeySecret(ownershipNS, name+"-forged-copy", forgedKeys[1])
	forged.Labels[keys.LabelSecretSync] = "admins-sync"
	forged.Immutable = ptr.To(true)
	createSecret(t, forged)

	ring, err := LoadOwnershipKey(ctx, k8s, ownershipNS, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range forgedKeys {
		if ring.Proven(signed(propagation.NewProver(k)), keys.LabelSecretSync) {
			t.Errorf("a copy signed with the key of a Secret that is not the manager's (%.1s...) is proven: the ring holds it", k)
		}
	}
	if !ring.Proven(old, keys.LabelSecretSync) {
		t.Error("a copy signed with the first key is not proven after the rotation")
	}
	if got, want := signed(ring).Annotations[keys.AnnotationOwnership], signed(propagation.NewProver(newKey)).Annotations[keys.AnnotationOwnership]; got != want {
		t.Errorf("the ring signs %q, want the newest key's %q", got, want)
	}
}
