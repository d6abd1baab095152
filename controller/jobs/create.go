package jobs

import (
	"context"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Answer is what the API server answered to the create of a slot's Job: the one create path of
// the At and ScheduledJob controllers (an At is a one-slot schedule).
type Answer int

const (
	// Created: the Job was created now.
	Created Answer = iota
	// Adopted: the Job existed and the owner controls it (created by a pass before a crash, or
	// by another replica): the slot's claim, not a second run.
	Adopted
	// Refused: the API server refused the Job as invalid (422, 400): it cannot pass until the
	// owner is edited.
	Refused
	// RefusedAtAdmission: admission refused the Job (403: a ResourceQuota on count/jobs.batch, a
	// ValidatingAdmissionPolicy, a webhook, RBAC; or, for about 30 s after an API server
	// restarts, OwnerReferencesPermissionEnforcement before it rediscovered our kinds), which may
	// pass later: the one answer of At and ScheduledJob is to say so at once and to try again after
	// jobstate.RefusedBackoff for as long as the slot can still start (an At: until its deadline; a
	// ScheduledJob's slot: until its deadline or the next slot).
	RefusedAtAdmission
	// NameTaken: a Job of that name exists and the owner does not control it.
	NameTaken
)

// Create creates job, the claim of its slot, for owner (of kind, for messages). The name is the
// slot's, so a second create of the same slot gets AlreadyExists and the existing Job is adopted
// when owner controls it. msg says what happened to the Job (for the Event and the status). err
// is an answer that says nothing about the Job (a timeout, a webhook unavailable, the namespace
// terminating): the slot is not decided, and the caller backs off and tries again.
func Create(ctx context.Context, c client.Client, api client.Reader, owner metav1.Object, kind string, job *batchv1.Job) (got *batchv1.Job, a Answer, msg string, err error) {
	err = c.Create(ctx, job)
	switch {
	case err == nil:
		return job, Created, "Created job " + job.Name, nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, 0, "", err
	case apierrors.IsForbidden(err):
		return nil, RefusedAtAdmission, jobstate.RefusalMessage(job.Name, true, err), nil
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return nil, Refused, jobstate.RefusalMessage(job.Name, false, err), nil
	case !apierrors.IsAlreadyExists(err):
		return nil, 0, "", err
	}
	var existing batchv1.Job
	if err := api.Get(ctx, client.ObjectKeyFromObject(job), &existing); err != nil {
		return nil, 0, "", err
	}
	if !metav1.IsControlledBy(&existing, owner) {
		return nil, NameTaken, "Job " + job.Name + " exists and is not controlled by this " + kind, nil
	}
	return &existing, Adopted, "Job " + job.Name + " already existed (created earlier by this " + kind + ")", nil
}

// Recheck is the one short requeue of the At and ScheduledJob controllers: the cache found behind
// the API server (a read around it, or a status write lost to a newer version, whose watch event
// usually starts the next pass first). Every other retry is the work queue's rate limiter (return
// the error) or jobstate.RefusedBackoff.
const Recheck = 100 * time.Millisecond
