// Package statuswrite is the one way the controllers write an object's status: only when it
// changed, through the status subresource with an optimistic lock (a pass that read a stale object
// cannot overwrite a newer status, and does not announce what it decided twice), with one answer
// for the caller to read. The caller sends the Events that explain a status only once it is
// Written.
//
// It owns no state and decides nothing about any kind; it must not import a reconciler.
package statuswrite

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Answer is what came of a status write.
type Answer int

const (
	// Unchanged: the status was what the object read already says; nothing was sent.
	Unchanged Answer = iota
	// Written: the API server has the status; obj holds the new resourceVersion.
	Written
	// Stale: a newer version exists (a conflict). Its watch event starts the next pass; the
	// caller requeues shortly at most, and sends no Events.
	Stale
	// Gone: the object was deleted.
	Gone
)

// Patch writes obj's status, which the caller has set, when it differs from before's (status
// reads it): a merge patch of the status subresource against before, with before's
// resourceVersion as the optimistic lock. An error is any other answer.
func Patch[O client.Object, S any](ctx context.Context, c client.Client, obj, before O, status func(O) S) (Answer, error) {
	if equality.Semantic.DeepEqual(status(before), status(obj)) {
		return Unchanged, nil
	}
	return answer(c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// Update writes obj's whole status, which the caller has set, when changed says it differs from
// what the API server has: an update of the status subresource (so zero values are stored, which
// a merge patch from a zero status leaves out), with obj's resourceVersion as the optimistic lock.
func Update(ctx context.Context, c client.Client, obj client.Object, changed bool) (Answer, error) {
	if !changed {
		return Unchanged, nil
	}
	return answer(c.Status().Update(ctx, obj))
}

func answer(err error) (Answer, error) {
	switch {
	case err == nil:
		return Written, nil
	case apierrors.IsConflict(err):
		return Stale, nil
	case apierrors.IsNotFound(err):
		return Gone, nil
	}
	return Unchanged, err
}
