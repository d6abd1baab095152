package jobstate

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

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
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[ScheduledTimeAnnotation] = scheduled
	tmpl := &job.Spec.Template
	if tmpl.Annotations == nil {
		tmpl.Annotations = map[string]string{}
	}
	tmpl.Annotations[ScheduledTimeAnnotation] = scheduled
	env := corev1.EnvVar{Name: ScheduledTimeEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: "metadata.annotations['" + ScheduledTimeAnnotation + "']",
	}}}
	for _, cs := range [][]corev1.Container{tmpl.Spec.InitContainers, tmpl.Spec.Containers} {
		for i := range cs {
			if !hasEnv(cs[i].Env, ScheduledTimeEnv) {
				cs[i].Env = append(cs[i].Env, env)
			}
		}
	}
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}
