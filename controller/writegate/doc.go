// Package writegate orders the manager's writes at a busy moment: the writes users wait for
// (Job creates, copy writes) go before the ones that can wait (status patches, history
// deletes), across controllers.
//
// It owns nothing in the cluster and calls no API: it only counts writes in flight. It must not
// import controller-runtime, client-go or a reconciler.
package writegate
