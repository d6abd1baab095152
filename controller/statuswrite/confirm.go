package statuswrite

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Confirmations answers the one question a pass asks before it acts on a status it read from
// the cache: is that object the version the API server has? The status it read may predate a
// record written by this process (the cache not yet showing its own last write) or by another
// (a new leader's first pass): an At or a ScheduledJob asks before it creates a Job, a SecretSync
// before it skips a status write that looks equal. It remembers, per
// owner (by key: a resourceVersion is never reused, so a recreated object does not match its
// predecessor's), the resourceVersion this process last saw the API server have: read around the
// cache (Current) or returned by its own status write (Wrote). Within one process the cache only
// moves forward, so after the first confirmation a pass at a slot costs no GET.
type Confirmations struct {
	// store: one entry per owner (its key and a resourceVersion, about 300 bytes), dropped when
	// it is deleted (Forget); paid by the tenants who create Ats and ScheduledJobs and by the
	// admins' SecretSyncs.
	versions sync.Map
}

// Current reports whether cached is the version the API server has: from memory when this
// process confirmed or wrote that version, else by one read into live (an empty object of
// cached's type). Not found is not current (the object is gone).
func (c *Confirmations) Current(ctx context.Context, api client.Reader, cached, live client.Object) (bool, error) {
	key := client.ObjectKeyFromObject(cached)
	if v, ok := c.versions.Load(key); ok && v == cached.GetResourceVersion() {
		return true, nil
	}
	if err := api.Get(ctx, key, live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if live.GetResourceVersion() != cached.GetResourceVersion() {
		return false, nil
	}
	c.versions.Store(key, cached.GetResourceVersion())
	return true, nil
}

// Wrote records the version this process's own write left in obj: the cache is current once it
// shows it.
func (c *Confirmations) Wrote(obj client.Object) {
	c.versions.Store(client.ObjectKeyFromObject(obj), obj.GetResourceVersion())
}

// Confirmed reports whether this process confirmed or wrote the version obj is.
func (c *Confirmations) Confirmed(obj client.Object) bool {
	v, ok := c.versions.Load(client.ObjectKeyFromObject(obj))
	return ok && v == obj.GetResourceVersion()
}

// Forget drops a deleted owner.
func (c *Confirmations) Forget(key client.ObjectKey) { c.versions.Delete(key) }
