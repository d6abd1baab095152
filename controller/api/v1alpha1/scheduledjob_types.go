package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RunNowAnnotation on a ScheduledJob asks for one run now, outside the schedule. Its value is a
// token of the user's choice (a timestamp, a UUID): each new token creates one Job (subject to
// concurrencyPolicy); setting the same token again does nothing.
const RunNowAnnotation = "ops.platform-operators.io/run-now"

// RunNowTokenAnnotation on a Job created by a run-now request holds the request's token.
const RunNowTokenAnnotation = "ops.platform-operators.io/run-now-token"

// ConcurrencyPolicy says what to do when a run is due while an earlier one is still active.
// +kubebuilder:validation:Enum=Allow;Forbid;Replace
type ConcurrencyPolicy string

const (
	// AllowConcurrent runs the new Job next to the active ones.
	AllowConcurrent ConcurrencyPolicy = "Allow"
	// ForbidConcurrent skips the new run while a Job is active.
	ForbidConcurrent ConcurrencyPolicy = "Forbid"
	// ReplaceConcurrent deletes the active Jobs and runs the new one.
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// ScheduledJobSpec has the fields of batch/v1 CronJob.
type ScheduledJobSpec struct {
	// schedule is a cron expression: five fields (minute hour day-of-month month day-of-week,
	// e.g. "*/5 * * * *"), or @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly,
	// or "@every <duration>". The time zone is timeZone, not a TZ= prefix.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^\\\\s*(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every\\\\s+[0-9][0-9a-z.]*|[0-9A-Za-z*?/,-]+(\\\\s+[0-9A-Za-z*?/,-]+){4})\\\\s*$')",message="schedule must be five cron fields (minute hour day-of-month month day-of-week) or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>; set the time zone with timeZone, not TZ= or CRON_TZ="
	Schedule string `json:"schedule"`

	// timeZone is the IANA time zone the schedule is read in, e.g. "Europe/Berlin". Default:
	// UTC. An unknown zone is reported in the Ready condition and an Event, and nothing runs
	// until it is fixed.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_+/-]+$`
	TimeZone *string `json:"timeZone,omitempty"`

	// startingDeadlineSeconds is how late, in seconds, a run may still start after its slot
	// (for example after the manager was down, or when Forbid held it back). A later slot is
	// skipped with an Event. Unset means no deadline. 0 is rejected: upstream accepts it and
	// then silently never runs.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="startingDeadlineSeconds must be at least 1: 0 means no run could ever start in time"
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// concurrencyPolicy is what to do when a run is due while an earlier Job is still active:
	// Allow (run both), Forbid (skip the new run) or Replace (delete the active Jobs first).
	// +optional
	// +kubebuilder:default=Allow
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// suspend stops new runs (scheduled and run-now); active Jobs keep running. Slots passed
	// while suspended are skipped with an Event.
	// +optional
	// +kubebuilder:default=false
	Suspend *bool `json:"suspend,omitempty"`

	// jobTemplate is the Job each run creates.
	// +required
	JobTemplate batchv1.JobTemplateSpec `json:"jobTemplate"`

	// successfulJobsHistoryLimit is how many succeeded Jobs to keep. Default 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`

	// failedJobsHistoryLimit is how many failed Jobs to keep. Default 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`
}

// ScheduledJobStatus is what the controller observed.
type ScheduledJobStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// active lists the Jobs of this ScheduledJob that have not finished.
	// +optional
	// +listType=atomic
	Active []corev1.ObjectReference `json:"active,omitempty"`

	// lastScheduleTime is the slot of the last scheduled run that was started (persisted, never
	// rebuilt from the Jobs, so pruned history never re-runs a slot).
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// lastSuccessfulTime is when the last Job succeeded.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// nextScheduleTime is the next slot; unset while suspended or when the schedule is invalid.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastSkippedTime is the last slot that was skipped (deadline, Forbid, suspend); it keeps a
	// skipped slot from being reported twice.
	// +optional
	LastSkippedTime *metav1.Time `json:"lastSkippedTime,omitempty"`

	// observedSchedule is the schedule and time zone ("<timeZone> <schedule>") that
	// observedScheduleTime refers to.
	// +optional
	ObservedSchedule string `json:"observedSchedule,omitempty"`

	// observedScheduleTime is when the controller first saw observedSchedule. Slots before it
	// never run, so editing the schedule or time zone does not fire a run for the past.
	// +optional
	ObservedScheduleTime *metav1.Time `json:"observedScheduleTime,omitempty"`

	// lastRunNowToken is the token of the last run-now request handled.
	// +optional
	LastRunNowToken string `json:"lastRunNowToken,omitempty"`

	// conditions: Ready is False with reason InvalidSchedule, UnknownTimeZone or
	// ScheduleNeverFires when the spec cannot run; True otherwise.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ScheduledJob creates Jobs on a cron schedule, like batch/v1 CronJob (same fields and
// semantics), plus nextScheduleTime, skipped-slot Events and metrics, run-now, and no
// retroactive run when the schedule is edited.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=sj,categories=platform-operators
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="name must be at most 52 characters: Job names get an 11-character suffix and are limited to 63"
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Timezone",type=string,JSONPath=`.spec.timeZone`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Schedule",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Next Schedule",type=string,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScheduledJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the schedule and the Job to run.
	// +required
	Spec ScheduledJobSpec `json:"spec"`
	// status is what the controller observed.
	// +optional
	Status ScheduledJobStatus `json:"status,omitempty"`
}

// ScheduledJobList is a list of ScheduledJob.
// +kubebuilder:object:root=true
type ScheduledJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ScheduledJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ScheduledJob{}, &ScheduledJobList{})
}
