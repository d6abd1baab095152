package scheduledjob

import (
	batchv1 "k8s.io/api/batch/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/jobs"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// CacheKind is the manager cache's ScheduledJob kind: every ScheduledJob (a tenant creates
// them), each in its bounded form (bounded).
func CacheKind() cachebounds.Kind {
	return cachebounds.Kind{
		Object: &v1alpha1.ScheduledJob{}, Transform: bounded,
		Bound: "bounded: metadata bounded (cachebounds.BoundedMeta), spec and status, a jobTemplate over 4 KiB as its digest (read from the API when a Job is created)",
	}
}

// bounded is the ScheduledJob cache's transform. A tenant may write a jobTemplate of nearly the
// API server's 1.5 MiB, and 100 of them took the manager to its memory limit: the cache keeps
// what decide reads (the schedule fields, the limits, the status, our annotations) and a template
// over jobs.MaxCachedTemplate only as its digest; jobs.ReadyToCreate reads the whole object from
// the API for the pass that creates a Job.
var bounded = jobs.BoundedOwner(func(sj *v1alpha1.ScheduledJob) *v1alpha1.ScheduledJob {
	meta := cachebounds.BoundedMeta(&sj.ObjectMeta, keys.AnnotationRunNow, keys.AnnotationBackfill, keys.AnnotationAlertNoSuccessAfter)
	return &v1alpha1.ScheduledJob{TypeMeta: sj.TypeMeta, ObjectMeta: meta, Spec: sj.Spec, Status: sj.Status}
}, func(sj *v1alpha1.ScheduledJob) any { return sj.Spec.JobTemplate },
	func(sj *v1alpha1.ScheduledJob) { sj.Spec.JobTemplate = batchv1.JobTemplateSpec{} })
