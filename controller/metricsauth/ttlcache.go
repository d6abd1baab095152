package metricsauth

import (
	"container/list"
	"sync"
	"time"
)

// ttlCache is a map of at most max entries that each live ttl after their last Add: one TTL per
// cache, so the least recently added entry is also the first to expire, and every Add first drops
// the expired ones from that end (an expired entry leaves on the next write, not only when it is
// read or pushed out by count). Keys are of fixed size (K is a digest or an address), so an entry
// costs the same whatever a client sends: entryBytes plus the value.
type ttlCache[K comparable, V any] struct {
	mu  sync.Mutex
	ttl time.Duration
	max int
	// store: max × entryBytes bytes with byKey (keys of fixed size); paid by the cache's user's
	// clients (see Guard).
	order *list.List // of *ttlEntry; front is the most recently added
	// store: counted with order, max × entryBytes bytes; paid by the same clients as order.
	byKey map[K]*list.Element
}

type ttlEntry[K comparable, V any] struct {
	key     K
	value   V
	expires time.Time
}

// entryBytes is what one entry of a ttlCache with a [32]byte key and a word-sized value costs on
// the heap, rounded up from TestTTLCacheEntryCost's measurement (map slot, list element, entry).
const entryBytes = 256

func newTTLCache[K comparable, V any](limit int, ttl time.Duration) *ttlCache[K, V] {
	return &ttlCache[K, V]{ttl: ttl, max: limit, order: list.New(), byKey: make(map[K]*list.Element)}
}

// get returns the value of key if it has not expired at now.
func (c *ttlCache[K, V]) get(key K, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el, ok := c.byKey[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*ttlEntry[K, V])
	if !now.Before(e.expires) {
		c.order.Remove(el)
		delete(c.byKey, key)
		return zero, false
	}
	return e.value, true
}

// add stores value under key until now+ttl, after dropping what has expired at now and, when
// full, the least recently added entry.
func (c *ttlCache[K, V]) add(key K, value V, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Back(); el != nil; el = c.order.Back() {
		e := el.Value.(*ttlEntry[K, V])
		if now.Before(e.expires) {
			break
		}
		c.order.Remove(el)
		delete(c.byKey, e.key)
	}
	if el, ok := c.byKey[key]; ok {
		e := el.Value.(*ttlEntry[K, V])
		e.value, e.expires = value, now.Add(c.ttl)
		c.order.MoveToFront(el)
		return
	}
	if c.order.Len() >= c.max {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.byKey, old.Value.(*ttlEntry[K, V]).key)
	}
	c.byKey[key] = c.order.PushFront(&ttlEntry[K, V]{key: key, value: value, expires: now.Add(c.ttl)})
}
