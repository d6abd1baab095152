package secretsync

import (
	"crypto/sha256"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// accountMemory remembers, per SecretSync, the ServiceAccounts whose cached form said a write was
// needed and whose object read from the API said none was: a ServiceAccount lists the copy's name
// itself past the entries the cache keeps (trimServiceAccount). Without it every pass would read
// each such ServiceAccount again, and a namespace's passes (serviceAccountWritesPerPass) would
// take the same first ones each time and never get past them: a tenant could make that a loop of
// reads. A verdict holds for one resourceVersion and one wanted state (what the pass wants listed
// and may remove there), so any change of either reads the ServiceAccount again.
type accountMemory struct {
	mu sync.Mutex
	// bySync maps a SecretSync's name to its verdicts, by ServiceAccount.
	// store: about 200 bytes per ServiceAccount found in step past the cache, per SecretSync; paid
	// by tenants' ServiceAccounts (their object quota), dropped with the SecretSync or the
	// ServiceAccount's change.
	bySync map[string]map[types.NamespacedName]accountVerdict
}

// accountVerdict is one ServiceAccount found in step past the cache.
type accountVerdict struct {
	resourceVersion string
	wanted          [sha256.Size]byte
}

// inStep reports whether the ServiceAccount at key, at resourceVersion, was found in step for
// the wanted state.
func (m *accountMemory) inStep(ss string, key types.NamespacedName, resourceVersion string, wanted [sha256.Size]byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.bySync[ss][key]
	return ok && v.resourceVersion == resourceVersion && v.wanted == wanted
}

// remember records that the ServiceAccount at key, at resourceVersion, was found in step.
func (m *accountMemory) remember(ss string, key types.NamespacedName, resourceVersion string, wanted [sha256.Size]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bySync == nil {
		m.bySync = map[string]map[types.NamespacedName]accountVerdict{}
	}
	if m.bySync[ss] == nil {
		m.bySync[ss] = map[types.NamespacedName]accountVerdict{}
	}
	m.bySync[ss][key] = accountVerdict{resourceVersion, wanted}
}

// forget drops the verdict of one ServiceAccount (it was written).
func (m *accountMemory) forget(ss string, key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.bySync[ss], key)
}

// keepOnly drops the SecretSync's verdicts of every ServiceAccount not in present (a whole
// pass's listing), and all of them when present is nil (the SecretSync is gone): the memory
// holds at most one verdict per existing ServiceAccount and SecretSync.
func (m *accountMemory) keepOnly(ss string, present map[types.NamespacedName]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if present == nil {
		delete(m.bySync, ss)
		return
	}
	for k := range m.bySync[ss] {
		if !present[k] {
			delete(m.bySync[ss], k)
		}
	}
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
