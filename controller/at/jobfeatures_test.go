package at

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/jobstate"
)

// TestDecideReportsTheJobFeatures: for each Job feature, the At's Job as the Job controller of
// Kubernetes v1.36 leaves it, what the At reports: its phase and the Succeeded condition's reason
// and message. A Job that waits (a queue suspended it, another controller manages it) makes the
// At Pending, never PodsNotCreated, however long it has had no pod.
func TestDecideReportsTheJobFeatures(t *testing.T) {
	runAt := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	now := runAt.Add(time.Hour) // long past stuckAfter
	const stuckAfter = 2 * time.Minute
	a := &v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Name: "report", Namespace: "team-a", Generation: 1},
		Spec:   v1alpha1.AtSpec{Schedule: metav1.NewTime(runAt), Command: "true"},
		Status: v1alpha1.AtStatus{Phase: v1alpha1.AtRunning, JobName: "report-29578500-abcde", ObservedGeneration: 1}}
	cond := func(typ batchv1.JobConditionType, reason, msg string) func(*batchv1.Job) {
		return func(j *batchv1.Job) {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
				LastTransitionTime: metav1.NewTime(runAt.Add(time.Minute))})
		}
	}
	const (
		failJob    = "Container main for pod team-a/x failed with exit code 42 matching FailJob rule at index 0"
		multiKueue = "kueue.x-k8s.io/multikueue"
	)
	for _, tc := range []struct {
		name   string
		mods   []func(*batchv1.Job)
		phase  v1alpha1.AtPhase
		reason string
		msg    string
	}{
		{name: "podFailurePolicy FailJob, pods terminating: Running", mods: []func(*batchv1.Job){cond(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, failJob)},
			phase: v1alpha1.AtRunning, reason: ReasonRunning},
		{name: "podFailurePolicy FailJob, then Failed: Failed with the Job's reason and message",
			mods:  []func(*batchv1.Job){cond(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, failJob), cond(batchv1.JobFailed, batchv1.JobReasonPodFailurePolicy, failJob)},
			phase: v1alpha1.AtFailed, reason: ReasonJobFailed, msg: "PodFailurePolicy: " + failJob},
		{name: "successPolicy met while an index failed: Succeeded, saying so",
			mods: []func(*batchv1.Job){func(j *batchv1.Job) { j.Status.Failed, j.Status.Succeeded = 1, 1 },
				cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, "Matched rules at index 0"), cond(batchv1.JobComplete, batchv1.JobReasonSuccessPolicy, "Matched rules at index 0")},
			phase: v1alpha1.AtSucceeded, reason: ReasonJobComplete, msg: "successPolicy: Matched rules at index 0"},
		{name: "backoffLimitPerIndex exceeded by one index: Failed FailedIndexes",
			mods:  []func(*batchv1.Job){cond(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, "Job has failed indexes"), cond(batchv1.JobFailed, batchv1.JobReasonFailedIndexes, "Job has failed indexes")},
			phase: v1alpha1.AtFailed, reason: ReasonJobFailed, msg: "FailedIndexes: Job has failed indexes"},
		{name: "suspended from the template with a Kueue queue label: Pending, JobSuspended, naming the queue",
			mods: []func(*batchv1.Job){func(j *batchv1.Job) {
				j.Spec.Suspend, j.Labels = ptr.To(true), map[string]string{jobstate.QueueNameLabel: "team-queue"}
			}, cond(batchv1.JobSuspended, "JobSuspended", "Job suspended")},
			phase: v1alpha1.AtPending, reason: ReasonJobSuspended, msg: "queued in team-queue"},
		{name: "managed by MultiKueue, no status for an hour: Pending, ManagedElsewhere",
			mods:  []func(*batchv1.Job){func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To(multiKueue) }},
			phase: v1alpha1.AtPending, reason: ReasonManagedElsewhere, msg: multiKueue},
		{name: "an ordinary Job with no pod for an hour is still reported stuck",
			phase: v1alpha1.AtRunning, reason: ReasonPodsNotCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: a.Status.JobName, CreationTimestamp: metav1.NewTime(runAt)}}
			for _, m := range tc.mods {
				m(j)
			}
			d := decide(a, j, now, stuckAfter)
			c := meta.FindStatusCondition(d.status.Conditions, ConditionSucceeded)
			if d.status.Phase != tc.phase || c == nil || c.Reason != tc.reason || !strings.Contains(d.status.Message, tc.msg) || c.Message != d.status.Message {
				t.Errorf("phase %s, condition %+v, message %q; want %s, reason %s, a message with %q", d.status.Phase, c, d.status.Message, tc.phase, tc.reason, tc.msg)
			}
			final := tc.phase == v1alpha1.AtSucceeded || tc.phase == v1alpha1.AtFailed
			if (d.status.CompletionTime != nil) != final {
				t.Errorf("completionTime %v, want set: %t", d.status.CompletionTime, final)
			}
			if d.create {
				t.Error("decide creates a second Job")
			}
		})
	}
}

// The Job features pass through NewJob as the template sets them; backoffLimit is 0 only when
// the template sets neither it nor backoffLimitPerIndex (the Job controller counts failures
// against backoffLimit too: 0 would fail a per-index Job at its first failed index).
func TestNewJobPassesTheJobFeaturesThrough(t *testing.T) {
	for _, tc := range []struct {
		name         string
		spec         batchv1.JobSpec
		backoffLimit *int32
	}{
		{name: "no limits: backoffLimit 0, runs once", spec: batchv1.JobSpec{}, backoffLimit: ptr.To[int32](0)},
		{name: "backoffLimit set: kept", spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](3)}, backoffLimit: ptr.To[int32](3)},
		{name: "backoffLimitPerIndex alone: backoffLimit left to batch/v1's default", spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion), Completions: ptr.To[int32](2), BackoffLimitPerIndex: ptr.To[int32](0)}},
		{name: "backoffLimitPerIndex and backoffLimit: both kept", spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion), Completions: ptr.To[int32](2), BackoffLimitPerIndex: ptr.To[int32](0), BackoffLimit: ptr.To[int32](5)},
			backoffLimit: ptr.To[int32](5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := commandAt("team", "report", time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
			a.Spec.Command = ""
			spec := tc.spec
			spec.Template = corev1PodTemplate("c")
			spec.Suspend, spec.ManagedBy = ptr.To(true), ptr.To("kueue.x-k8s.io/multikueue")
			spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}}}}
			a.Spec.JobTemplate = &batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{jobstate.QueueNameLabel: "q"}}, Spec: spec}
			j := NewJob(a, testImage)
			if !ptr.Equal(j.Spec.BackoffLimit, tc.backoffLimit) {
				t.Errorf("backoffLimit = %v, want %v", ptr.Deref(j.Spec.BackoffLimit, -1), ptr.Deref(tc.backoffLimit, -1))
			}
			if !ptr.Deref(j.Spec.Suspend, false) || ptr.Deref(j.Spec.ManagedBy, "") != "kueue.x-k8s.io/multikueue" || j.Spec.PodFailurePolicy == nil ||
				!ptr.Equal(j.Spec.BackoffLimitPerIndex, tc.spec.BackoffLimitPerIndex) || j.Labels[jobstate.QueueNameLabel] != "q" {
				t.Errorf("job spec %+v, labels %v: a Job feature of the template was lost", j.Spec, j.Labels)
			}
		})
	}
}
