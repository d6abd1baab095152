// Package leaderfence keeps a replica that has lost the leader Lease without noticing from
// writing to the cluster.
//
// client-go's leader election tells a replica it leads until its renew loop gives up, and a
// replica that was frozen (SIGSTOP, a long stall of its node, a VM paused past the Lease) learns
// that only when it runs again: for a moment its workers carry on with the passes they were in,
// writing while another replica already leads. The Fence closes that window: it remembers, by the
// local clock, when the Lease was last acquired or renewed, and a transport wrapped by it refuses
// every write request once that is longer ago than the renew deadline, which is shorter than the
// Lease itself, so no other replica can have taken over yet while writes still leave the process. A request sent just before the deadline can still arrive after
// it: the margin is the Lease duration minus the renew deadline (docs/reliability.md).
//
// It owns the Lease lock the manager elects with and the fenced transport. It must not decide
// what is written: the fenced transport passes every read and refuses writes only.
package leaderfence
