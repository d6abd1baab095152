package jobs

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// hostileJob is what a tenant can create where the admission policies are off: our label on a
// Job with a large pod template and large annotations and labels.
func hostileJob() *batchv1.Job {
	big := strings.Repeat("x", 200<<10)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: "sj-29000000-abcde", Namespace: "tenant", UID: "uid-1", ResourceVersion: "42",
			Labels: map[string]string{keys.LabelCreatedBy: "scheduledjob", "team": "a"},
			Annotations: map[string]string{
				jobstate.ScheduledTimeAnnotation: "2026-11-26T06:00:00Z", keys.AnnotationRunNowToken: "t1",
				"huge": big, "kubectl.kubernetes.io/last-applied-configuration": big,
			},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "uid-x"},
				{APIVersion: "ops.platform-operators.io/v1alpha1", Kind: "ScheduledJob", Name: "sj", UID: "uid-owner", Controller: ptr.To(true)},
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"huge": big}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i", Command: []string{big}}}},
		}},
		Status: batchv1.JobStatus{Active: 1, StartTime: &metav1.Time{}},
	}
}

func TestTrimKeepsWhatTheControllersReadAndABoundedRest(t *testing.T) {
	in := hostileJob()
	got, err := Trim(in.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	j := got.(*batchv1.Job)
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 2048 {
		t.Errorf("a trimmed hostile Job is %d bytes of JSON, want at most 2 KiB (the original is %d KiB)", len(raw), len(mustJSON(t, in))>>10)
	}
	if j.Name != in.Name || j.Namespace != in.Namespace || j.UID != in.UID || j.ResourceVersion != in.ResourceVersion {
		t.Errorf("identity lost: %+v", j.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(j); ref == nil || ref.UID != "uid-owner" || len(j.OwnerReferences) != 1 {
		t.Errorf("owner references = %+v, want the controller's only", j.OwnerReferences)
	}
	if j.Labels[keys.LabelCreatedBy] != "scheduledjob" || len(j.Labels) != 1 {
		t.Errorf("labels = %v, want our created-by only", j.Labels)
	}
	if j.Annotations[jobstate.ScheduledTimeAnnotation] != "2026-11-26T06:00:00Z" || j.Annotations[keys.AnnotationRunNowToken] != "t1" || len(j.Annotations) != 2 {
		t.Errorf("annotations = %v, want the scheduled time and the run-now token only", j.Annotations)
	}
	if j.Status.Active != 1 || j.Status.StartTime == nil {
		t.Errorf("status lost: %+v", j.Status)
	}
	if !ptr.Deref(j.Spec.Suspend, false) {
		t.Errorf("spec.suspend lost: a suspended Job would be reported jobstate.PodsNotCreated")
	}
	if len(j.Spec.Template.Spec.Containers) != 0 || j.ManagedFields != nil {
		t.Errorf("the pod template or managed fields were kept")
	}
}

func TestTrimCutsALongValueOfOurs(t *testing.T) {
	in := hostileJob()
	in.Annotations[keys.AnnotationRunNowToken] = strings.Repeat("t", 100<<10)
	got, _ := Trim(in)
	if n := len(got.(*batchv1.Job).Annotations[keys.AnnotationRunNowToken]); n != maxKeptValue {
		t.Errorf("a 100 KiB run-now token is kept as %d bytes, want %d", n, maxKeptValue)
	}
}

func TestTrimPassesOtherKindsThrough(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if got, _ := Trim(cm); got != cm {
		t.Error("Trim changed an object that is not a Job")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTrimKeepsWhatJudgeReads(t *testing.T) {
	in := hostileJob()
	in.Labels[jobstate.QueueNameLabel] = "team-a"
	in.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue")
	in.Status = batchv1.JobStatus{}
	got, _ := Trim(in.DeepCopy())
	j := got.(*batchv1.Job)
	if a, b := jobstate.Judge(in), jobstate.Judge(j); a != b {
		t.Errorf("jobstate.Judge of the trimmed Job = %+v, of the Job %+v", b, a)
	}
	if j.Labels[jobstate.QueueNameLabel] != "team-a" || ptr.Deref(j.Spec.ManagedBy, "") != "kueue.x-k8s.io/multikueue" {
		t.Errorf("trimmed labels %v, managedBy %v: the queue label and managedBy lost", j.Labels, j.Spec.ManagedBy)
	}
	in.Spec.ManagedBy = ptr.To(strings.Repeat("m", 100<<10))
	got, _ = Trim(in)
	if n := len(ptr.Deref(got.(*batchv1.Job).Spec.ManagedBy, "")); n != maxKeptValue {
		t.Errorf("a 100 KiB managedBy is kept as %d bytes, want %d", n, maxKeptValue)
	}
}
