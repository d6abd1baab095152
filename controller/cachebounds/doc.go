// Package cachebounds is the inventory of every cache the manager starts, and the only way to
// build one: each kind a cache holds is declared with its bound (Kind), and Options turns an
// Inventory into controller-runtime cache.Options.
//
// The rule it enforces (docs/security.md, "Every informer is bounded"): a tenant decides neither
// how large a cached object is nor, where the cache is selected on a key of ours, how many there
// are. So every declared kind has a Transform to a bounded form (and, where it can, a label
// selector on a key only the manager may set); a kind with no Transform is refused when the
// cache is built; an informer of a kind nobody declared (a controller reading a new kind through
// the cache-backed client starts one on first use) keeps only the identity of each object
// (Identity), and is recorded as undeclared, so that the enumerating test in controller/cmd/manager
// (TestEveryInformerTheManagerStartsIsBounded) fails.
//
// It owns the inventory's types, the fail-closed default transform and the record of every
// informer built (Built). It must not know any controller's kinds: each controller package
// declares its own (CacheKinds), and the manager's wiring puts them together.
package cachebounds
