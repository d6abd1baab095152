package secretsync

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// DefaultOwnershipKeySecret names the Secret, in the manager's own namespace, that holds the key
// of the ownership proofs (keys.AnnotationOwnership).
const DefaultOwnershipKeySecret = "platform-operators-ownership-key"

// ownershipKeyField is the data key of the key in that Secret.
const ownershipKeyField = "key"

// ownershipKeyBytes is the size of a new key: SHA-256's block is 64 bytes, 32 is its strength.
const ownershipKeyBytes = 32

// ComponentOwnershipKey is the app.kubernetes.io/component value of the key's Secret.
const ComponentOwnershipKey = "ownership-key"

// OwnershipKeyType is the type of the Secrets that hold ownership keys: no source, tenant or
// chart makes a Secret of it by accident, and SecretSync never copies one (see propagation).
const OwnershipKeyType = propagation.TypeOwnershipKey

// LoadOwnershipKey returns the Prover of this installation: a ring of the keys in the Secret
// namespace/name and in the Secrets named name-<anything> there that pass keyUntrusted, oldest
// (by creation) first; it signs with the newest. When the Secret name does not exist it is made
// (32 random bytes, OwnershipKeyType, immutable, our labels) and created. Replicas starting
// together agree: the one whose create loses (AlreadyExists) reads the winner's. c must read past
// any cache (the manager caches no such Secret) and be allowed to write before the leader
// election.
//
// The Secret name must be the manager's own (keyUntrusted): one that is not (a copy a SecretSync
// put there, a Secret someone made by hand without our labels, a mutable one) is an error, never
// trusted and never replaced: replacing it would make every copy unproven. So is a key shorter
// than 32 bytes. A name-<anything> Secret that is not the manager's is left out of the ring, and
// logged.
//
// Rotation (docs/secretsync.md): create name-<date> as the manager would, restart the manager;
// every copy is re-signed with the new key at its next pass; delete the old Secret once every
// SecretSync is Ready again.
func LoadOwnershipKey(ctx context.Context, c client.Client, namespace, name string) (*propagation.Prover, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	for range 3 {
		s := &corev1.Secret{}
		err := c.Get(ctx, key, s)
		if err == nil {
			if why := keyUntrusted(s, true); why != "" {
				return nil, fmt.Errorf("the ownership key Secret %s is not the manager's (%s): it is not trusted; delete it to have a new one made (copies then need adoption, see docs/secretsync.md)", key, why)
			}
			return loadRing(ctx, c, s)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the ownership key Secret %s: %w", key, err)
		}
		k := make([]byte, ownershipKeyBytes)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		s = NewOwnershipKeySecret(namespace, name, k)
		switch err := c.Create(ctx, s); {
		case err == nil:
			return loadRing(ctx, c, s)
		case !apierrors.IsAlreadyExists(err):
			return nil, fmt.Errorf("creating the ownership key Secret %s: %w", key, err)
		}
		// Another replica created it first: read theirs.
	}
	return nil, fmt.Errorf("the ownership key Secret %s was neither readable nor creatable", key)
}

// NewOwnershipKeySecret is the Secret the manager makes to hold key: OwnershipKeyType,
// immutable, labelled as the manager's. An admin who rotates the key makes one like it
// (docs/secretsync.md).
func NewOwnershipKeySecret(namespace, name string, key []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			keys.LabelManagedBy: keys.ManagedByValue, componentLabel: ComponentOwnershipKey,
		}},
		Type:      OwnershipKeyType,
		Immutable: ptr.To(true),
		Data:      map[string][]byte{ownershipKeyField: key},
	}
}

// componentLabel is the label whose value ComponentOwnershipKey marks a key Secret.
const componentLabel = "app.kubernetes.io/component"

// keyUntrusted says why s may not hold an ownership key ("" when it may): it must be of
// OwnershipKeyType (or, for the named Secret only, Opaque: what versions before made), immutable
// (nobody changes a key in place), labelled as the manager's key, and nothing else: not a copy
// (our SecretSync or CopyRequest label, a source annotation), not owned by another object; and
// hold a key of at least 32 bytes.
func keyUntrusted(s *corev1.Secret, named bool) string {
	legacy := named && s.Type == corev1.SecretTypeOpaque
	switch {
	case s.Type != OwnershipKeyType && !legacy:
		return fmt.Sprintf("type %s, want %s", s.Type, OwnershipKeyType)
	case s.Immutable == nil || !*s.Immutable:
		return "not immutable"
	case s.Labels[keys.LabelManagedBy] != keys.ManagedByValue || s.Labels[componentLabel] != ComponentOwnershipKey:
		return fmt.Sprintf("labels %s=%s and %s=%s missing", keys.LabelManagedBy, keys.ManagedByValue, componentLabel, ComponentOwnershipKey)
	case s.Labels[keys.LabelSecretSync] != "" || s.Labels[keys.LabelCopyRequest] != "" || s.Annotations[keys.AnnotationSource] != "":
		return "it is a copy made by a SecretSync or CopyRequest"
	case len(s.OwnerReferences) > 0:
		return "it is owned by another object"
	case len(s.Data[ownershipKeyField]) < ownershipKeyBytes:
		return fmt.Sprintf("%d bytes under %q, want at least %d", len(s.Data[ownershipKeyField]), ownershipKeyField, ownershipKeyBytes)
	}
	return ""
}

// loadRing returns the Prover of the named key Secret and of the other key Secrets of its ring
// (named <its name>-<anything>, trusted), oldest first. A ring that cannot be listed (RBAC) is
// the named key alone.
func loadRing(ctx context.Context, c client.Client, named *corev1.Secret) (*propagation.Prover, error) {
	ring := []*corev1.Secret{named}
	list := &corev1.SecretList{}
	err := c.List(ctx, list, client.InNamespace(named.Namespace), client.MatchingLabels{componentLabel: ComponentOwnershipKey})
	if err != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("listing the ownership key Secrets of %s: %w", named.Namespace, err)
	}
	for i := range list.Items {
		s := &list.Items[i]
		if !strings.HasPrefix(s.Name, named.Name+"-") {
			continue
		}
		if why := keyUntrusted(s, false); why != "" {
			ctrl.LoggerFrom(ctx).Info("A Secret named like an ownership key is not the manager's and is left out of the key ring", "secret", klog.KObj(s), "why", why)
			continue
		}
		ring = append(ring, s)
	}
	slices.SortStableFunc(ring, func(a, b *corev1.Secret) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	keyBytes := make([][]byte, len(ring))
	for i, s := range ring {
		keyBytes[i] = s.Data[ownershipKeyField]
	}
	return propagation.NewProver(keyBytes...), nil
}
