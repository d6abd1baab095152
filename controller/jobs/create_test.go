package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
	}{
		{name: "created", want: Created, msg: "Created job"},
		{name: "its own Job exists: adopted", existing: ours(), want: Adopted, msg: "already existed"},
		{name: "a Job not ours has the name", existing: theirs, want: NameTaken, msg: "not controlled by this ScheduledJob"},
		{name: "admission refuses (403)", refuse: apierrors.NewForbidden(gr, "x", errors.New("exceeded quota")), want: RefusedAtAdmission, msg: RefusalPrefix},
		{name: "invalid (422)", refuse: apierrors.NewInvalid(batchv1.SchemeGroupVersion.WithKind("Job").GroupKind(), "x", field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), "x", "bad")}), want: Refused, msg: "is invalid"},
		{name: "bad request (400)", refuse: apierrors.NewBadRequest("bad"), want: Refused, msg: RefusalPrefix},
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
			got, answer, msg, err := Create(context.Background(), c, c, owner, "ScheduledJob", ours())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if answer != tc.want || !strings.Contains(msg, tc.msg) {
				t.Errorf("answer %d %q, want %d containing %q", answer, msg, tc.want, tc.msg)
			}
			if (got != nil) != (answer == Created || answer == Adopted) {
				t.Errorf("job %v for answer %d: want a Job exactly when created or adopted", got, answer)
			}
		})
	}
}

func TestRefusedBackoff(t *testing.T) {
	for _, tc := range []struct{ late, want time.Duration }{
		{0, time.Second}, {2 * time.Second, time.Second}, {8 * time.Second, 2 * time.Second},
		{time.Minute, 15 * time.Second}, {time.Hour, 5 * time.Minute},
	} {
		if got := RefusedBackoff(tc.late); got != tc.want {
			t.Errorf("RefusedBackoff(%v) = %v, want %v", tc.late, got, tc.want)
		}
	}
}

func TestRefusalReadsTheCauseAndWhetherAdmissionRefused(t *testing.T) {
	for _, tc := range []struct {
		msg, cause    string
		admission, ok bool
	}{
		{RefusalPrefix + "sj-1-123: jobs.batch \"sj-1-123\" is invalid: x", "jobs.batch \"\" is invalid: x", false, true},
		{RefusalPrefix + "sj-1-123" + atAdmission + ": jobs.batch \"sj-1-123\" is forbidden: exceeded quota", "jobs.batch \"\" is forbidden: exceeded quota", true, true},
		{"something else", "something else", false, false},
	} {
		cause, admission, ok := Refusal(tc.msg)
		if cause != tc.cause || admission != tc.admission || ok != tc.ok {
			t.Errorf("Refusal(%q) = %q, %v, %v; want %q, %v, %v", tc.msg, cause, admission, ok, tc.cause, tc.admission, tc.ok)
		}
	}
}

func TestWindowRetryStaysWithinTheSlotsWindow(t *testing.T) {
	due := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		w         Window
		refusedAt time.Time
		want      time.Time
		ok        bool
	}{
		{"at once: a second later", Window{Due: due, End: due.Add(time.Minute)}, due, due.Add(time.Second), true},
		{"a quarter of how late", Window{Due: due, End: due.Add(time.Minute)}, due.Add(20 * time.Second), due.Add(25 * time.Second), true},
		{"past the end: the refusal is the result", Window{Due: due, End: due.Add(time.Minute)}, due.Add(50 * time.Second), due.Add(62500 * time.Millisecond), false},
		{"no end (an At without a deadline)", Window{Due: due}, due.Add(time.Hour), due.Add(time.Hour + 5*time.Minute), true},
	} {
		got, ok := tc.w.Retry(tc.refusedAt)
		if !got.Equal(tc.want) || ok != tc.ok {
			t.Errorf("%s: Retry = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
