package jobs

import (
	"context"
	"encoding/json"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/digest"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
	"github.com/platform-operators/platform-operators/controller/logic/slotplan"
	"github.com/platform-operators/platform-operators/controller/logic/writeerror"
	"github.com/platform-operators/platform-operators/controller/statuswrite"
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
	// RefusedAtAdmission: admission refused the Job (403: a quota, a policy, a webhook, RBAC; or
	// OwnerReferencesPermissionEnforcement for about 30 s after an API server restarts), which
	// may pass later: At and ScheduledJob say so at once and try again after
	// jobstate.RefusedBackoff while the slot can still start (before its deadline or next slot).
	RefusedAtAdmission
	// NameTaken: a Job of that name exists and the owner does not control it.
	NameTaken
)

// Create creates job, the claim of its slot, for owner (of kind, for messages): a second create of
// the same slot gets AlreadyExists and the existing Job is adopted when owner controls it. ev is
// the Event that says what happened to the Job, the same for an At and a ScheduledJob (which
// sends none for a Job it adopted). err says nothing about the Job (a timeout, a webhook
// unavailable, the namespace terminating): the slot is not decided, and the caller backs off.
func Create(ctx context.Context, c client.Client, api client.Reader, owner metav1.Object, kind string, job *batchv1.Job) (got *batchv1.Job, a Answer, ev slotplan.Event, err error) {
	if err = c.Create(ctx, job); err == nil {
		return job, Created, slotplan.Event{Kind: corev1.EventTypeNormal, Reason: slotplan.ReasonSuccessfulCreate, Note: "Created job " + job.Name}, nil
	}
	// Unlike a copy (secretsync), a Job is built from the tenant's template: a 400 refuses it as
	// surely as a 422 does. A 413 is not the Job's (the owner holding its template fits in etcd,
	// far below the API server's request limit), so it is an error like a stale cache, the
	// namespace terminating or a timeout; AlreadyExists is the slot's claim.
	switch class := writeerror.Classify(err); {
	case class == writeerror.Forbidden:
		return nil, RefusedAtAdmission, slotplan.Event{Kind: corev1.EventTypeWarning, Reason: slotplan.ReasonJobRejected, Note: jobstate.RefusalMessage(job.Name, true, err)}, nil
	case class == writeerror.Invalid || class == writeerror.TooLong || class == writeerror.BadRequest:
		return nil, Refused, slotplan.Event{Kind: corev1.EventTypeWarning, Reason: slotplan.ReasonJobRejected, Note: jobstate.RefusalMessage(job.Name, false, err)}, nil
	case !apierrors.IsAlreadyExists(err):
		return nil, 0, ev, err
	}
	var existing batchv1.Job
	if err := api.Get(ctx, client.ObjectKeyFromObject(job), &existing); err != nil {
		return nil, 0, ev, err
	}
	if !metav1.IsControlledBy(&existing, owner) {
		return nil, NameTaken, slotplan.Event{Kind: corev1.EventTypeWarning, Reason: "JobNameTaken", Note: "Job " + job.Name + " exists and is not controlled by this " + kind}, nil
	}
	return &existing, Adopted, slotplan.Event{Kind: corev1.EventTypeNormal, Reason: "AdoptedJob", Note: "Job " + job.Name + " already existed (created earlier by this " + kind + ")"}, nil
}

// Of lists owner's Jobs from the cache (ControllerUIDIndex).
func Of(ctx context.Context, c client.Reader, owner metav1.Object) ([]*batchv1.Job, error) {
	var list batchv1.JobList
	err := c.List(ctx, &list, client.InNamespace(owner.GetNamespace()), client.MatchingFields{ControllerUIDIndex: string(owner.GetUID())})
	out := make([]*batchv1.Job, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, err
}

// Read reads the named Jobs around the cache (one it has not seen yet is not missing): those
// owner controls and keep (nil: any) accepts.
func Read(ctx context.Context, api client.Reader, owner metav1.Object, names []string, keep func(*batchv1.Job) bool) ([]*batchv1.Job, error) {
	var out []*batchv1.Job
	for _, name := range names {
		var j batchv1.Job
		err := api.Get(ctx, client.ObjectKey{Namespace: owner.GetNamespace(), Name: name}, &j)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		case metav1.IsControlledBy(&j, owner) && (keep == nil || keep(&j)):
			out = append(out, &j)
		}
	}
	return out, nil
}

// WriteStatus writes obj's status, which the caller has set, against before (statuswrite.Patch),
// and records a version written in confirmed. done: the pass ends there with res and err (the
// write failed, obj changed since it was read, or is gone); else the caller sends the Events the
// status explains.
func WriteStatus[O client.Object, S any](ctx context.Context, c client.Client, confirmed *statuswrite.Confirmations, obj, before O, status func(O) S) (res ctrl.Result, done bool, err error) {
	answer, err := statuswrite.Patch(ctx, c, obj, before, status)
	if answer == statuswrite.Written {
		confirmed.Wrote(obj) // the Patch left the new resourceVersion in obj
	}
	if answer == statuswrite.Stale {
		return ctrl.Result{RequeueAfter: Recheck}, true, nil
	}
	return ctrl.Result{}, err != nil || answer == statuswrite.Gone, err
}

// Recheck is the one short requeue of the At and ScheduledJob controllers: the cache found behind
// the API server. Every other retry is the work queue's rate limiter or jobstate.RefusedBackoff.
const Recheck = 100 * time.Millisecond

// TemplateDigest is the annotation a cache puts, in place of a job template it dropped, on an At
// or a ScheduledJob: the digest (digest.Of) of what it dropped. The ':' makes it a key the API
// server refuses, so no object from the API carries it: a tenant cannot forge the mark.
const TemplateDigest = keys.Prefix + "cached:template-digest"

// MaxCachedTemplate is the size (serialized) above which a cache keeps a job template as its
// digest.
const MaxCachedTemplate = 4 << 10

// TemplateDropped reports whether the cache dropped the job template of an object it holds.
func TemplateDropped(m metav1.Object) bool {
	_, ok := m.GetAnnotations()[TemplateDigest]
	return ok
}

// BoundedOwner is the cache transform of an owner of our Jobs (an At, a ScheduledJob): a tenant
// may write a template of nearly the API server's 1.5 MiB. slim is the owner's cached form; run,
// what of its spec only its Jobs are built from, stays in it only up to MaxCachedTemplate, else
// drop removes it and the form is marked with its digest (ReadyToCreate reads the whole object
// for the pass that creates a Job). It is idempotent.
func BoundedOwner[T metav1.Object](slim func(T) T, run func(T) any, drop func(T)) func(any) (any, error) {
	return func(obj any) (any, error) {
		o, ok := obj.(T)
		if !ok || TemplateDropped(o) {
			return obj, nil
		}
		out := slim(o)
		b, err := json.Marshal(run(o))
		if err != nil || len(b) <= MaxCachedTemplate {
			return out, err
		}
		if out.GetAnnotations() == nil {
			out.SetAnnotations(map[string]string{})
		}
		out.GetAnnotations()[TemplateDigest] = digest.Of(b)
		drop(out)
		return out, nil
	}
}

// ReadyToCreate says whether a pass may create cached's Jobs: the slot protocol's claim needs
// cached to be the version the API server has (the status it read may predate another process's
// record), and a template the cache dropped is put back (restore copies it from live, read from
// the API server at most once for both). done, as WriteStatus's: the pass ends there with res and
// err (an error, or look again after Recheck).
func ReadyToCreate[T client.Object](ctx context.Context, api client.Reader, confirmed *statuswrite.Confirmations, cached, live T, restore func(live T)) (res ctrl.Result, done bool, err error) {
	current, err := confirmed.Current(ctx, api, cached, live)
	if err == nil && current && TemplateDropped(cached) {
		current, err = WithTemplate(ctx, api, cached, live, restore)
	}
	if err != nil {
		return ctrl.Result{}, true, err
	}
	return ctrl.Result{RequeueAfter: Recheck}, !current, nil
}

// WithTemplate puts back into cached, whose template the cache dropped, what restore copies from
// live, read from the API server unless Current already read it. False when the API server's
// object is not the cached one's generation (or is gone).
func WithTemplate[T client.Object](ctx context.Context, api client.Reader, cached, live T, restore func(live T)) (bool, error) {
	if live.GetResourceVersion() == "" {
		if err := api.Get(ctx, client.ObjectKeyFromObject(cached), live); err != nil {
			return false, client.IgnoreNotFound(err)
		}
	}
	if live.GetUID() != cached.GetUID() || live.GetGeneration() != cached.GetGeneration() {
		return false, nil
	}
	restore(live)
	delete(cached.GetAnnotations(), TemplateDigest)
	return true, nil
}
