package secretsync

import (
	"crypto/sha256"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// The accounts memory (targets.accounts) remembers the ServiceAccounts whose cached form said a
// write was needed and whose object read from the API said none was: a ServiceAccount lists the
// copy's name itself past the entries the cache keeps (trimServiceAccount). Without it every pass
// would read each such ServiceAccount again, and a namespace's passes (serviceAccountWritesPerPass)
// would take the same first ones each time and never get past them: a tenant could make that a
// loop of reads. A verdict holds for one resourceVersion and one wanted state (what the pass wants
// listed and may remove there), so any change of either reads the ServiceAccount again.
type accountVerdict struct {
	resourceVersion string
	wanted          [sha256.Size]byte
}

// serviceAccountTarget is the kind of the accounts memory's keys.
const serviceAccountTarget v1alpha1.CopyKind = "ServiceAccount"

// account is the key of the SecretSync ss's verdict of the ServiceAccount at key.
func account(ss string, key types.NamespacedName) ownedTarget {
	return ownedTarget{ss, targetKey{serviceAccountTarget, key}}
}

// inStep reports whether the ServiceAccount at key, at resourceVersion, was found in step for
// the wanted state.
func (t *targets) inStep(ss string, key types.NamespacedName, resourceVersion string, wanted [sha256.Size]byte) bool {
	v, ok := t.accounts.load(account(ss, key))
	return ok && v == accountVerdict{resourceVersion, wanted}
}

// wantedDigest is the digest of what a pass wants of a ServiceAccount's list: the names to list
// and the names it may remove.
func wantedDigest(want, known map[string]bool) [sha256.Size]byte {
	sorted := func(m map[string]bool) string {
		out := make([]string, 0, len(m))
		for n, ok := range m {
			if ok {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	return sha256.Sum256([]byte(sorted(want) + "\x00" + sorted(known)))
}
