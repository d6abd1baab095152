package at

import (
	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/jobs"
)

// CacheKind is the manager cache's At kind: every At (a tenant creates them), each in its
// bounded form (bounded).
func CacheKind() cachebounds.Kind {
	return cachebounds.Kind{
		Object: &v1alpha1.At{}, Transform: bounded,
		Bound: "bounded: metadata bounded (cachebounds.BoundedMeta), spec and status, a command and jobTemplate over 4 KiB as their digest (read from the API when the Job is created)",
	}
}

// bounded is the At cache's transform: what decide reads (the time, the deadline, the status,
// our annotations), and the command and jobTemplate (a tenant may write nearly the API server's
// 1.5 MiB) only when together they serialize to at most jobs.MaxCachedTemplate, else as their
// digest; Reconcile takes them from the object it reads from the API before the create.
var bounded = jobs.BoundedOwner(func(at *v1alpha1.At) *v1alpha1.At {
	return &v1alpha1.At{TypeMeta: at.TypeMeta, ObjectMeta: cachebounds.BoundedMeta(&at.ObjectMeta), Spec: at.Spec, Status: at.Status}
}, func(at *v1alpha1.At) any {
	run := struct {
		Command     string `json:"command,omitempty"`
		JobTemplate any    `json:"jobTemplate,omitempty"`
	}{Command: at.Spec.Command}
	if at.Spec.JobTemplate != nil {
		run.JobTemplate = at.Spec.JobTemplate // not a typed nil: omitted when unset
	}
	return run
}, func(at *v1alpha1.At) { at.Spec.Command, at.Spec.JobTemplate = "", nil })
