// Package portguard serves the manager's own ports (metrics, health probes) so that a client
// spends little of the manager before a handler runs: a request's line and headers are at most
// MaxHeaderBytes and must arrive within ReadHeaderTimeout, and connections are limited per source
// address and in all (Listener): a connection over a limit is closed at once, unread.
//
// controller-runtime's servers read up to 1 MiB of request line and headers on any number of
// connections before any handler (the metrics guard, package metricsauth) sees the request: 128
// connections from one pod, each sending a 1 MiB method, got the manager OOM-killed on kind
// (docs/security.md). It must not decide who may read what (metricsauth does) nor serve
// anything but the handlers it is given.
package portguard
