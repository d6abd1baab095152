package statuswrite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestEveryAnswerOfAStatusWrite(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	phase := func(p *corev1.Pod) corev1.PodPhase { return p.Status.Phase }
	for _, tc := range []struct {
		name   string
		phase  corev1.PodPhase
		answer error
		want   Answer
		err    bool
	}{
		{name: "unchanged: nothing sent", phase: corev1.PodPending, want: Unchanged},
		{name: "written", phase: corev1.PodRunning, want: Written},
		{name: "a newer version exists", phase: corev1.PodRunning, answer: apierrors.NewConflict(gr, "p", errors.New("changed")), want: Stale},
		{name: "deleted", phase: corev1.PodRunning, answer: apierrors.NewNotFound(gr, "p"), want: Gone},
		{name: "any other answer is an error", phase: corev1.PodRunning, answer: apierrors.NewTimeoutError("slow", 1), err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
			sent := 0
			c := fake.NewClientBuilder().WithObjects(pod.DeepCopy()).WithStatusSubresource(&corev1.Pod{}).WithInterceptorFuncs(interceptor.Funcs{
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					sent++
					if tc.answer != nil {
						return tc.answer
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				},
			}).Build()
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), pod); err != nil {
				t.Fatal(err)
			}
			before := pod.DeepCopy()
			pod.Status.Phase = tc.phase
			got, err := Patch(context.Background(), c, pod, before, phase)
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("Patch = %v, %v; want %v, error %v", got, err, tc.want, tc.err)
			}
			if want := map[bool]int{true: 0, false: 1}[tc.want == Unchanged && !tc.err]; sent != want {
				t.Errorf("%d writes sent, want %d", sent, want)
			}
			if tc.want == Written {
				var live corev1.Pod
				if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), &live); err != nil || live.Status.Phase != corev1.PodRunning {
					t.Errorf("live phase %q (%v), want Running", live.Status.Phase, err)
				}
			}
		})
	}
}

func TestAPatchFromAStaleObjectConflicts(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	c := fake.NewClientBuilder().WithObjects(pod).WithStatusSubresource(&corev1.Pod{}).Build()
	ctx := context.Background()
	var stale corev1.Pod
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &stale); err != nil {
		t.Fatal(err)
	}
	newer := stale.DeepCopy()
	newer.Status.Phase = corev1.PodFailed
	if err := c.Status().Update(ctx, newer); err != nil {
		t.Fatal(err)
	}
	before := stale.DeepCopy()
	stale.Status.Phase = corev1.PodRunning
	if got, err := Patch(ctx, c, &stale, before, func(p *corev1.Pod) corev1.PodPhase { return p.Status.Phase }); got != Stale || err != nil {
		t.Errorf("Patch from a stale object = %v, %v; want Stale (the optimistic lock)", got, err)
	}
}

// Every status write of the product goes through this package: the controllers' sources call
// neither Status().Patch nor Status().Update themselves.
func TestEveryStatusWriteGoesThroughThisPackage(t *testing.T) {
	re := regexp.MustCompile(`\.Status\(\)\s*\.\s*(Patch|Update|Apply)\(`)
	var found []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "statuswrite" || d.Name() == "internal" || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if re.Match(src) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("status written outside statuswrite in %v", found)
	}
}
