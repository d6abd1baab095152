package jobstate

import (
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// ourDomain is the DNS domain of our keys' prefix: a key under it, or under a subdomain of it
// (x.ops.platform-operators.io/...), is ours whether or not package keys names it yet.
var ourDomain = strings.TrimSuffix(keys.Prefix, "/")

// IsOurKey reports whether a label or annotation key (with its value) is one only the manager
// may put on an object: any key under our domain, and the managed-by label claiming us. A
// template a tenant writes must never carry one onto an object the manager creates, since the
// admission policies let the manager write our keys.
func IsOurKey(key, value string) bool {
	if key == keys.LabelManagedBy {
		return value == keys.ManagedByValue
	}
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == ourDomain || strings.HasSuffix(prefix, "."+ourDomain))
}

// TemplateMetadata returns copies of a jobTemplate's labels and annotations without any key of
// ours (IsOurKey), for the Job the manager creates from it; the manager then adds its own keys.
// Both maps are new and never nil. Without it, a tenant's jobTemplate could put our keys on a Job
// through the manager's hands, which the admission policy lets through.
func TemplateMetadata(labels, annotations map[string]string) (outLabels, outAnnotations map[string]string) {
	without := func(m map[string]string) map[string]string {
		out := make(map[string]string, len(m))
		maps.Copy(out, m)
		maps.DeleteFunc(out, IsOurKey)
		return out
	}
	return without(labels), without(annotations)
}

// NewJob is the Job name that owner (of gvk, its controller) creates from a template's metadata
// (without our keys) and spec, labelled createdBy, with its scheduled time (WithScheduledTime).
func NewJob(owner metav1.Object, gvk schema.GroupVersionKind, name, createdBy string, tmpl metav1.ObjectMeta, spec batchv1.JobSpec, scheduled string) *batchv1.Job {
	labels, annotations := TemplateMetadata(tmpl.Labels, tmpl.Annotations)
	labels[keys.LabelCreatedBy] = createdBy
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: owner.GetNamespace(), Labels: labels, Annotations: annotations,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)}}, Spec: spec}
	WithScheduledTime(job, scheduled)
	return job
}

// ScheduledTimeAnnotation holds the time a run was scheduled for (RFC 3339), on the Job and on
// its pods. It is the key upstream's CronJob controller writes on its Jobs
// (batchv1.CronJobScheduledTimestampAnnotation), so tools that read it there work here too.
const ScheduledTimeAnnotation = batchv1.CronJobScheduledTimestampAnnotation

// ScheduledTimeEnv is the environment variable every container of a run gets: the scheduled
// time, read from the pod's ScheduledTimeAnnotation through the downward API.
const ScheduledTimeEnv = "SCHEDULED_TIME"

// WithScheduledTime writes scheduled (RFC 3339) into job's and its pod template's
// ScheduledTimeAnnotation and gives every container and init container ScheduledTimeEnv from
// it. A container that sets ScheduledTimeEnv itself keeps its own value.
func WithScheduledTime(job *batchv1.Job, scheduled string) {
	metav1.SetMetaDataAnnotation(&job.ObjectMeta, ScheduledTimeAnnotation, scheduled)
	tmpl := &job.Spec.Template
	metav1.SetMetaDataAnnotation(&tmpl.ObjectMeta, ScheduledTimeAnnotation, scheduled)
	env := corev1.EnvVar{Name: ScheduledTimeEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: "metadata.annotations['" + ScheduledTimeAnnotation + "']",
	}}}
	for _, cs := range [][]corev1.Container{tmpl.Spec.InitContainers, tmpl.Spec.Containers} {
		for i := range cs {
			if !slices.ContainsFunc(cs[i].Env, func(e corev1.EnvVar) bool { return e.Name == ScheduledTimeEnv }) {
				cs[i].Env = append(cs[i].Env, env)
			}
		}
	}
}
