package writeerror

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestClassifySortsEachAnswerOfTheAPIServer(t *testing.T) {
	secrets := schema.GroupResource{Resource: "secrets"}
	withCause := func(err *apierrors.StatusError, cause metav1.CauseType) error {
		err.ErrStatus.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: cause}}}
		return err
	}
	invalid := func(errs ...*field.Error) error {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "creds", errs)
	}
	for _, tc := range []struct {
		name string
		err  error
		want Class
	}{
		{"a conflict is a stale cache", apierrors.NewConflict(secrets, "creds", errors.New("changed")), Stale},
		{"a not found is a stale cache", apierrors.NewNotFound(secrets, "creds"), Stale},
		{"an already exists is a stale cache", apierrors.NewAlreadyExists(secrets, "creds"), Stale},
		{"a wrapped conflict is a stale cache", fmt.Errorf("update: %w", apierrors.NewConflict(secrets, "creds", errors.New("changed"))), Stale},
		{"a 403 for a terminating namespace is the namespace terminating", withCause(apierrors.NewForbidden(secrets, "creds", errors.New("terminating")), corev1.NamespaceTerminatingCause), NamespaceTerminating},
		{"another 403 is forbidden", apierrors.NewForbidden(secrets, "creds", errors.New("exceeded quota")), Forbidden},
		{"a 413 is too large", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), TooLarge},
		{"a 422 naming a value too long is too long", invalid(field.TooLong(field.NewPath("data"), "", 1<<20)), TooLong},
		{"a 422 naming too many is too long", invalid(field.TooMany(field.NewPath("data"), 300, 256)), TooLong},
		{"another 422 is invalid", invalid(field.Invalid(field.NewPath("metadata", "labels"), "x", "denied by a policy")), Invalid},
		{"a 400 is a bad request", apierrors.NewBadRequest("bad"), BadRequest},
		{"a server error is other", apierrors.NewInternalError(errors.New("etcd")), Other},
		{"a timeout is other", apierrors.NewTimeoutError("slow", 1), Other},
		{"an error not from the API server is other", errors.New("connection refused"), Other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}
