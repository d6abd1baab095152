package secretsync

import (
	"container/list"
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxSourceReadBytes bounds what a SourceReads remembers by default (main.go's).
const MaxSourceReadBytes = 32 << 20

// SourceReads remembers the last whole read of each source (a Secret or ConfigMap that a
// SecretSync copies or a CopyRequest asks for), so that a source is read from the API once per
// resourceVersion however many SecretSyncs and CopyRequests name it: the caches hold sources in a
// bounded form (no data), and without this each of 30 CopyRequests of one offered source woke by
// an annotation touch read the whole source again. One instance is shared by both controllers
// (main.go builds it).
//
// Whoever writes a source decides its size, so what is remembered is bounded in bytes
// (MaxBytes): the least recently used reads are forgotten first, and a source larger than the
// bound is read each time rather than remembered. Each read is paid for by who asked first: the
// admins' SecretSyncs (payer "") or a tenant's CopyRequests (payer: their namespace). Tenants
// together hold at most half of MaxBytes, one tenant an eighth, and a tenant's read forgets only
// tenants' reads: a tenant offering itself 1 MiB ConfigMaps cannot push out the admins' sources.
// An admin's read may forget anyone's, and takes over a read a tenant paid for. Reads of one
// source wait for each other, so the workers woken by one event make one read, not one each.
//
// What Read returns is shared: callers must not change it.
type SourceReads struct {
	// Reader reads a source whole, past the caches (the manager's API reader).
	Reader client.Reader
	// MaxBytes bounds the bytes remembered (data, labels and annotations, see readSize).
	MaxBytes int

	mu sync.Mutex
	// store: MaxBytes bytes (32 MiB by default) with lru, each read counted by readSize; paid by
	// who asked first: the admins' SecretSyncs, or a tenant's CopyRequests (tenants at most half,
	// one tenant an eighth).
	byKey map[readKey]*list.Element // of *readEntry
	// store: counted with byKey, within MaxBytes bytes; paid by the same readers as byKey.
	lru   list.List // most recently used first
	bytes int
	// store: about 100 bytes per read under way, at most the workers; paid by nobody outside.
	inflight map[readKey]chan struct{}
	// tenantBytes is what tenants pay for; byTenant per tenant (no entry at 0).
	tenantBytes int
	// store: about 50 bytes per tenant with a remembered read; paid by the tenants, within
	// MaxBytes.
	byTenant map[string]int
}

// NewSourceReads returns a SourceReads reading with reader and remembering up to maxBytes.
func NewSourceReads(reader client.Reader, maxBytes int) *SourceReads {
	return &SourceReads{Reader: reader, MaxBytes: maxBytes}
}

type readKey struct {
	kind            string
	namespace, name string
}

type readEntry struct {
	key readKey
	obj *corev1.Secret
	// asked is the resourceVersion the read was made for: a cache behind the API server asks
	// for an older one than it got, and asks again until its event for the newer one arrives.
	asked string
	size  int
	// payer is the tenant namespace whose CopyRequest asked first, "" for the admins.
	payer string
}

// Read returns the source of kind at key whole, as it was at resourceVersion or later: the
// remembered read when it answers for resourceVersion, else a read from the API (remembered,
// paid for by payer: "" for a SecretSync, a CopyRequest's namespace for it). nil when the source
// does not exist. An empty resourceVersion always reads.
func (m *SourceReads) Read(ctx context.Context, payer string, kind *objectKind, key types.NamespacedName, resourceVersion string) (*corev1.Secret, error) {
	k := readKey{kind: string(kind.name), namespace: key.Namespace, name: key.Name}
	for {
		m.mu.Lock()
		if m.byKey == nil {
			m.byKey, m.inflight, m.byTenant = map[readKey]*list.Element{}, map[readKey]chan struct{}{}, map[string]int{}
		}
		if el := m.byKey[k]; el != nil && resourceVersion != "" {
			e := el.Value.(*readEntry)
			if e.obj.ResourceVersion == resourceVersion || e.asked == resourceVersion {
				m.lru.MoveToFront(el)
				if payer == "" && e.payer != "" {
					m.charge(e, -1)
					e.payer = ""
				}
				m.mu.Unlock()
				return e.obj, nil
			}
		}
		wait, busy := m.inflight[k]
		if !busy {
			done := make(chan struct{})
			m.inflight[k] = done
			m.mu.Unlock()
			obj, err := m.read(ctx, k, payer, kind, key, resourceVersion)
			m.mu.Lock()
			delete(m.inflight, k)
			close(done)
			m.mu.Unlock()
			return obj, err
		}
		m.mu.Unlock()
		// Another worker reads this source: its read is likely the one wanted.
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// read reads the source from the API and remembers it as k; the caller holds k's inflight mark.
func (m *SourceReads) read(ctx context.Context, k readKey, payer string, kind *objectKind, key types.NamespacedName, asked string) (*corev1.Secret, error) {
	obj := kind.object()
	err := m.Reader.Get(ctx, key, obj)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.remove(k)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	obj.SetManagedFields(nil) // nobody reads them; not worth remembering
	s := kind.wrap(obj)
	if n := readSize(s); m.makeRoom(payer, n) {
		e := &readEntry{key: k, obj: s, asked: asked, size: n, payer: payer}
		m.byKey[k] = m.lru.PushFront(e)
		m.bytes += n
		m.charge(e, 1)
	}
	return s, nil
}

// makeRoom forgets reads until payer's read of n bytes fits, and says whether it does: within
// MaxBytes for the admins (forgetting the least recently used of anyone's); for a tenant, within
// its eighth and the tenants' half, forgetting tenants' reads only. The caller holds mu.
func (m *SourceReads) makeRoom(payer string, n int) bool {
	if payer == "" {
		if n > m.MaxBytes {
			return false
		}
		for m.bytes+n > m.MaxBytes {
			m.remove(m.lru.Back().Value.(*readEntry).key)
		}
		return true
	}
	perTenant, tenants := m.MaxBytes/8, m.MaxBytes/2
	if n > perTenant {
		return false
	}
	for m.byTenant[payer]+n > perTenant {
		if !m.removeOldest(func(e *readEntry) bool { return e.payer == payer }) {
			return false
		}
	}
	for m.tenantBytes+n > tenants || m.bytes+n > m.MaxBytes {
		if !m.removeOldest(func(e *readEntry) bool { return e.payer != "" }) {
			return false // the admins' reads fill it: the tenant's is not remembered
		}
	}
	return true
}

// removeOldest forgets the least recently used read that match says, if any. The caller holds mu.
func (m *SourceReads) removeOldest(match func(*readEntry) bool) bool {
	for el := m.lru.Back(); el != nil; el = el.Prev() {
		if e := el.Value.(*readEntry); match(e) {
			m.remove(e.key)
			return true
		}
	}
	return false
}

// charge adds (sign 1) or takes back (-1) e's bytes from its tenant payer's account. The caller
// holds mu.
func (m *SourceReads) charge(e *readEntry, sign int) {
	if e.payer == "" {
		return
	}
	m.tenantBytes += sign * e.size
	if m.byTenant[e.payer] += sign * e.size; m.byTenant[e.payer] == 0 {
		delete(m.byTenant, e.payer)
	}
}

// remove forgets k; the caller holds mu.
func (m *SourceReads) remove(k readKey) {
	if el := m.byKey[k]; el != nil {
		m.bytes -= el.Value.(*readEntry).size
		m.charge(el.Value.(*readEntry), -1)
		m.lru.Remove(el)
		delete(m.byKey, k)
	}
}

// Forget forgets the reads of sources in namespace (its source cache stopped).
func (m *SourceReads) Forget(namespace string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.byKey {
		if k.namespace == namespace {
			m.remove(k)
		}
	}
}

// readSize is what a remembered read costs as MaxBytes counts it: its data and the metadata a
// writer of the source decides (labels, annotations), plus a small fixed part.
func readSize(s *corev1.Secret) int {
	n := 512 + len(s.Namespace) + len(s.Name)
	for _, m := range []map[string]string{s.Labels, s.Annotations} {
		for k, v := range m {
			n += len(k) + len(v)
		}
	}
	for k, v := range s.Data {
		n += len(k) + len(v)
	}
	return n
}
