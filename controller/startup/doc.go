// Package startup holds what the manager does around its start, apart from the controllers:
// waiting for the Kubernetes API server to answer before the manager is built (a fresh node may
// not route the Service VIP yet), and starting the informers the controllers need up front, with a
// readiness check that latches once they have synced.
package startup
