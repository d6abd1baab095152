package testenv

// Envtest runs no Job controller: these helpers play it, marking Jobs finished the way
// kube-controller-manager does, with the conditions the API server requires
// (SuccessCriteriaMet before Complete, FailureTarget before Failed; before Kubernetes 1.31, whose
// API refuses SuccessCriteriaMet on a Job without a successPolicy, Complete alone).

import (
	"context"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Finish sets the Job's status to Complete (succeeded) or Failed, started at start and finished
// at end.
func Finish(ctx context.Context, c client.Client, job *batchv1.Job, succeeded bool, start, end time.Time) error {
	s, e := metav1.NewTime(start), metav1.NewTime(end)
	job.Status.StartTime = &s
	cond := func(t batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: reason, LastProbeTime: e, LastTransitionTime: e}
	}
	if succeeded {
		job.Status.CompletionTime = &e
		job.Status.Succeeded = 1
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached"), cond(batchv1.JobComplete, "CompletionsReached")}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, "BackoffLimitExceeded"), cond(batchv1.JobFailed, "BackoffLimitExceeded")}
	}
	err := c.Status().Update(ctx, job)
	if succeeded && apierrors.IsInvalid(err) && strings.Contains(err.Error(), string(batchv1.JobSuccessCriteriaMet)) {
		// A 1.30 API server (make test-oldest-kube): its Job controller sets Complete alone.
		job.Status.Conditions = job.Status.Conditions[1:]
		err = c.Status().Update(ctx, job)
	}
	return err
}

// RefusePods sets the Job's status as the Job controller (Kubernetes 1.36) leaves it when
// admission refuses every pod create (Pod Security, a ResourceQuota, a webhook): startTime at
// start, no pod counted (ready and terminating 0), no condition; FailedCreate Events aside.
func RefusePods(ctx context.Context, c client.Client, job *batchv1.Job, start time.Time) error {
	s := metav1.NewTime(start)
	job.Status = batchv1.JobStatus{StartTime: &s, Ready: new(int32), Terminating: new(int32), UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{}}
	return c.Status().Update(ctx, job)
}

// StartPod sets one active, ready pod on a started Job (what the Job controller does once a pod
// create goes through).
func StartPod(ctx context.Context, c client.Client, job *batchv1.Job) error {
	one := int32(1)
	job.Status.Active, job.Status.Ready = 1, &one
	return c.Status().Update(ctx, job)
}
