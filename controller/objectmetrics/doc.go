// Package objectmetrics holds the per-object Prometheus series of tenant objects (a ScheduledJob's
// last success, an At's phase), labelled namespace and name, for at most a fixed number of objects.
//
// Tenants create these objects, so their number is not ours to choose: one series per object
// without a bound would let one namespace grow the manager's memory and every Prometheus that
// scrapes it. A Store keeps values for the first Limit objects it is given (--per-object-metrics-limit)
// and only the names of the others, which it counts in platform_operators_object_metrics_untracked_objects;
// an object's values are dropped when the object is deleted, and an untracked object takes a freed
// place at its next reconcile. The values are emitted at scrape time as constant metrics, so a
// deleted object's series end with the scrape after its deletion.
//
// A Collector emits a Store's samples as the series it describes.
//
// It imports no controller-runtime and no client: the reconcilers call Set and Delete.
package objectmetrics
