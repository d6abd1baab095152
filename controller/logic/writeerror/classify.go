package writeerror

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Class is what a failed write's error says.
type Class int

const (
	// Other: a server error, a timeout, anything not below; the same write may pass later.
	Other Class = iota
	// Stale: Conflict, NotFound or AlreadyExists; the write was decided on a cache behind the
	// API server.
	Stale
	// NamespaceTerminating: the namespace began terminating (a 403 with that cause).
	NamespaceTerminating
	// Forbidden: any other 403 (admission: a quota, a policy, a webhook; RBAC).
	Forbidden
	// TooLarge: 413, the request over the API server's limit.
	TooLarge
	// TooLong: a 422 naming a value too long or too many.
	TooLong
	// Invalid: any other 422 (the schema, an admission policy).
	Invalid
	// BadRequest: 400.
	BadRequest
)

// Classify sorts err, a write's error (not nil). The namespace's terminating comes first: it is
// a cause carried by a 403.
func Classify(err error) Class {
	switch {
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return NamespaceTerminating
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err):
		return Stale
	case apierrors.IsForbidden(err):
		return Forbidden
	case apierrors.IsRequestEntityTooLargeError(err):
		return TooLarge
	case apierrors.IsInvalid(err) && (apierrors.HasStatusCause(err, metav1.CauseTypeTooLong) || apierrors.HasStatusCause(err, metav1.CauseTypeTooMany)):
		return TooLong
	case apierrors.IsInvalid(err):
		return Invalid
	case apierrors.IsBadRequest(err):
		return BadRequest
	}
	return Other
}
