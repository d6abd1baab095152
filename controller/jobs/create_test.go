package jobs

import (
	"context"
	"errors"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Every answer the API server can give to a slot Job's create maps to one Answer (or an error
// that decides nothing), the same for the At and the ScheduledJob controllers.
func TestCreateAnswersEveryOutcomeOfTheClaim(t *testing.T) {
	owner := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: "ns", UID: "owner-uid"}}
	ours := func() *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "sj-29000000-abcde", Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, batchv1.SchemeGroupVersion.WithKind("Job"))}}}
	}
	theirs := ours()
	theirs.OwnerReferences = nil
	gr := schema.GroupResource{Group: "batch", Resource: "jobs"}
	terminating := apierrors.NewForbidden(gr, "x", errors.New("namespace ns is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for _, tc := range []struct {
		name     string
		existing *batchv1.Job
		refuse   error
		want     Answer
		wantErr  bool
		msg      string
		reason   string
	}{
		{name: "created", want: Created, msg: "Created job", reason: "SuccessfulCreate"},
		{name: "its own Job exists: adopted", existing: ours(), want: Adopted, msg: "already existed", reason: "AdoptedJob"},
		{name: "a Job not ours has the name", existing: theirs, want: NameTaken, msg: "not controlled by this ScheduledJob", reason: "JobNameTaken"},
		{name: "admission refuses (403)", refuse: apierrors.NewForbidden(gr, "x", errors.New("exceeded quota")), want: RefusedAtAdmission, msg: jobstate.RefusalPrefix, reason: "JobRejected"},
		{name: "invalid (422)", refuse: apierrors.NewInvalid(batchv1.SchemeGroupVersion.WithKind("Job").GroupKind(), "x", field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), "x", "bad")}), want: Refused, msg: "is invalid", reason: "JobRejected"},
		{name: "bad request (400)", refuse: apierrors.NewBadRequest("bad"), want: Refused, msg: jobstate.RefusalPrefix, reason: "JobRejected"},
		{name: "a timeout decides nothing", refuse: apierrors.NewTimeoutError("slow", 1), wantErr: true},
		{name: "a terminating namespace decides nothing", refuse: terminating, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder()
			if tc.existing != nil {
				b = b.WithObjects(tc.existing)
			}
			c := b.WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if tc.refuse != nil {
					return tc.refuse
				}
				return c.Create(ctx, obj, opts...)
			}}).Build()
			got, answer, ev, err := Create(context.Background(), c, c, owner, "ScheduledJob", ours())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if answer != tc.want || !strings.Contains(ev.Note, tc.msg) || ev.Reason != tc.reason {
				t.Errorf("answer %d %+v, want %d, an Event %s containing %q", answer, ev, tc.want, tc.reason, tc.msg)
			}
			if (got != nil) != (answer == Created || answer == Adopted) {
				t.Errorf("job %v for answer %d: want a Job exactly when created or adopted", got, answer)
			}
		})
	}
}
