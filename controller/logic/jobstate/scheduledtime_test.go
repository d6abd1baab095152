package jobstate

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestWithScheduledTime(t *testing.T) {
	const when = "2026-03-29T02:00:00+02:00"
	job := &batchv1.Job{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers: []corev1.Container{
			{Name: "plain"},
			{Name: "own", Env: []corev1.EnvVar{{Name: "SCHEDULED_TIME", Value: "mine"}, {Name: "OTHER", Value: "x"}}},
		},
	}}}}
	WithScheduledTime(job, when)
	if job.Annotations[ScheduledTimeAnnotation] != when || job.Spec.Template.Annotations[ScheduledTimeAnnotation] != when {
		t.Errorf("annotations: job %v, pod template %v", job.Annotations, job.Spec.Template.Annotations)
	}
	fromAnnotation := func(c corev1.Container) bool {
		for _, e := range c.Env {
			if e.Name == ScheduledTimeEnv {
				return e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
					e.ValueFrom.FieldRef.FieldPath == "metadata.annotations['batch.kubernetes.io/cronjob-scheduled-timestamp']"
			}
		}
		return false
	}
	p := job.Spec.Template.Spec
	for _, tc := range []struct {
		c    corev1.Container
		want bool
	}{{p.InitContainers[0], true}, {p.Containers[0], true}, {p.Containers[1], false}} {
		if got := fromAnnotation(tc.c); got != tc.want {
			t.Errorf("container %s: SCHEDULED_TIME from the annotation = %t, want %t (env %+v)", tc.c.Name, got, tc.want, tc.c.Env)
		}
	}
	if own := p.Containers[1].Env; len(own) != 2 || own[0].Value != "mine" {
		t.Errorf("a container's own SCHEDULED_TIME was changed: %+v", own)
	}
	// Twice is the same as once (a retried create builds the Job again).
	WithScheduledTime(job, when)
	if n := len(job.Spec.Template.Spec.Containers[0].Env); n != 1 {
		t.Errorf("%d env vars after a second call, want 1", n)
	}
}
