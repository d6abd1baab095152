package secretsync

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
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

// LoadOwnershipKey returns the Prover of this installation: the key is read from the Secret
// namespace/name, or, when it does not exist, made (32 random bytes) and created, immutable.
// Replicas starting together agree: the one whose create loses (AlreadyExists) reads the
// winner's. c must read past any cache (the manager caches no such Secret) and be allowed to
// write before the leader election. A Secret with a key shorter than 32 bytes is an error, never
// replaced: replacing it would make every copy unproven.
//
// Deleting the Secret and restarting the manager makes a new key; copies then carry proofs of the
// old one and are adopted again where their data is the source's (docs/secretsync.md).
func LoadOwnershipKey(ctx context.Context, c client.Client, namespace, name string) (*propagation.Prover, error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	for range 3 {
		s := &corev1.Secret{}
		err := c.Get(ctx, key, s)
		if err == nil {
			k := s.Data[ownershipKeyField]
			if len(k) < ownershipKeyBytes {
				return nil, fmt.Errorf("the ownership key Secret %s holds %d bytes under %q, want at least %d; delete it to have a new one made", key, len(k), ownershipKeyField, ownershipKeyBytes)
			}
			return propagation.NewProver(k), nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the ownership key Secret %s: %w", key, err)
		}
		k := make([]byte, ownershipKeyBytes)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
				keys.LabelManagedBy: keys.ManagedByValue, "app.kubernetes.io/component": ComponentOwnershipKey,
			}},
			Type:      corev1.SecretTypeOpaque,
			Immutable: ptr.To(true),
			Data:      map[string][]byte{ownershipKeyField: k},
		}
		switch err := c.Create(ctx, s); {
		case err == nil:
			return propagation.NewProver(k), nil
		case !apierrors.IsAlreadyExists(err):
			return nil, fmt.Errorf("creating the ownership key Secret %s: %w", key, err)
		}
		// Another replica created it first: read theirs.
	}
	return nil, fmt.Errorf("the ownership key Secret %s was neither readable nor creatable", key)
}
