// Package fairqueue is a controller work queue that is fair across namespaces: among the items
// ready at the same priority it hands out one per namespace in turn (round robin), so one
// tenant's thousands of objects queued first delay another tenant's single object by one turn
// of the workers, not by the whole backlog. Requests without a namespace (a cluster-scoped
// object such as a SecretSync's whole pass) share a lane of their own.
//
// It keeps what controller-runtime's queues promise: an item queued twice is one item (the
// higher priority and the earlier ready time win), a key is never handed out again before Done,
// AddAfter and rate-limited requeues wait, Forget and NumRequeues reach the rate limiter,
// ShutDown wakes every waiting worker, and the workqueue metrics are kept. It implements
// controller-runtime's priorityqueue.PriorityQueue, so a Reconcile's Result.Priority and the
// event handlers' low priority for the initial list keep working; priorities order first, the
// namespaces share each priority.
//
// It calls no API and needs no cluster: the queue is generic over its items and told their lane
// by a function; NewQueue is the controller-runtime wiring (controller.Options.NewQueue).
package fairqueue
