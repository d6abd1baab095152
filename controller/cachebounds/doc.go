// Package cachebounds is the inventory of every cache the manager starts, and the only way to
// build one: each kind a cache holds is declared with its bound (Kind), and New (a cache of its
// own) or ManagerOptions (the manager's cache) turns an Inventory into a cache holding those
// kinds only.
//
// The rule it enforces (docs/security.md, "Every informer is bounded"): a tenant decides neither
// how large a cached object is nor, where the cache is selected on a key of ours, how many there
// are. So every declared kind has a Transform to a bounded form (and, where it can, a label
// selector on a key only the manager may set); a kind with no Transform is refused when the
// cache is built; and a kind nobody declared is refused by the cache itself, no informer started
// (UndeclaredError from GetInformer, GetInformerForKind and IndexField, recorded for the
// enumerating test TestEveryInformerTheManagerStartsIsBounded in controller/cmd/manager;
// controller-runtime's ErrResourceNotCached from Get and List, ReaderFailOnMissingInformer;
// IsUndeclared tells both), so a controller reading a new kind through the cache-backed client
// fails loudly instead of caching a tenant's objects. New and ManagerOptions are the only ways to build
// such a cache; should an informer of an undeclared kind start some other way, it keeps only each
// object's identity (Identity).
//
// Each informer's watches are bounded too (watches.go): a watch lasts at most MaxWatchTimeout
// (the streaming list of the initial objects excepted), and a stopped watch is dropped and
// drained, so a tenant's largest objects cost each informer at most one watch's decode buffers.
//
// It owns the inventory's types, the refusal of undeclared kinds, the default transform, the
// bound of the watches and the list of what the running caches built and refused (Built). It
// must not know any controller's kinds: each controller package declares its own (CacheKinds),
// and the manager's wiring puts them together.
package cachebounds
