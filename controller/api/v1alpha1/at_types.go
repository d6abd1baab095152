package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AtPhase is where an At is in its life.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type AtPhase string

const (
	// AtPending means the scheduled time has not come yet (or the Job is not created yet), or
	// the Job exists and waits: suspended (reason JobSuspended: a queue such as Kueue holds it)
	// or managed by another controller that has not reported it started (reason
	// ManagedElsewhere: spec.managedBy).
	AtPending AtPhase = "Pending"
	// AtRunning means the Job exists and has not finished.
	AtRunning AtPhase = "Running"
	// AtSucceeded means the Job completed.
	AtSucceeded AtPhase = "Succeeded"
	// AtFailed means the Job failed, or the start was missed (startingDeadlineSeconds).
	AtFailed AtPhase = "Failed"
)

// AtSpec is what to run once, and when.
// +kubebuilder:validation:XValidation:rule="has(self.command) != has(self.jobTemplate)",message="exactly one of command or jobTemplate must be set"
// +kubebuilder:validation:XValidation:rule="has(self.schedule) != has(self.localTime)",message="exactly one of schedule (RFC 3339 with an offset) or localTime (with timeZone) must be set"
// +kubebuilder:validation:XValidation:rule="has(self.localTime) == has(self.timeZone)",message="localTime needs timeZone, and timeZone applies only to localTime (schedule carries its own offset)"
// +kubebuilder:validation:XValidation:rule="!has(self.image) || has(self.command)",message="image applies only to command; with jobTemplate, set the image in the template"
type AtSpec struct {
	// schedule is when to run: an RFC 3339 time with any UTC offset, e.g.
	// 2026-05-01T09:30:00+02:00 or 2026-05-01T07:30:00Z (upper-case T and Z, seconds required,
	// fractional seconds allowed). A time in the past runs at once (unless
	// startingDeadlineSeconds says it is too late).
	// Exactly one of schedule and localTime is set.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`
	Schedule metav1.Time `json:"schedule,omitempty"`

	// localTime is when to run as a wall-clock time in timeZone, without an offset, e.g.
	// 2026-12-06T03:00:00 with timeZone Europe/Berlin. A time the clocks jump over (spring
	// forward) runs later by the jump (02:30 in a 02:00->03:00 gap runs at 03:30); a time that
	// occurs twice (fall back) runs at the first. status.scheduledTime shows the instant, and an
	// Event says when a rule was applied.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$`
	LocalTime string `json:"localTime,omitempty"`

	// timeZone is the IANA time zone of localTime, e.g. Europe/Berlin. Only with localTime.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$')`,message=`timeZone must be an IANA time zone name such as Europe/Berlin, America/Argentina/Buenos_Aires, Etc/GMT+5 or UTC: letters, digits, _ + - and single / between parts`
	// +kubebuilder:validation:XValidation:rule=`self.lowerAscii() != 'local'`,message=`timeZone must name a zone, not Local (the manager's own zone): use an IANA name such as Europe/Berlin`
	TimeZone *string `json:"timeZone,omitempty"`

	// command is a shell command line, run as `/bin/sh -c <command>` in image, so quoting, pipes
	// and variables work as in a shell. Exactly one of command and jobTemplate is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32768
	Command string `json:"command,omitempty"`

	// image is the container image that runs command. Default: the manager's job image (the
	// chart value jobImage). Only with command.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// jobTemplate is a full Job template to run instead of command. Its pod template's
	// restartPolicy must be Never or OnFailure (the Job API requires it) and is Never when
	// unset; backoffLimit is 0 when unset (the command runs once), unless backoffLimitPerIndex is
	// set, which leaves it to batch/v1's default. Its metadata may not carry keys of the add-on
	// (ops.platform-operators.io/*): the add-on's own keys on the Job are its alone.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.metadata) || ((!has(self.metadata.labels) || self.metadata.labels.all(k, !k.startsWith('ops.platform-operators.io/'))) && (!has(self.metadata.annotations) || self.metadata.annotations.all(k, !k.startsWith('ops.platform-operators.io/'))))",message="jobTemplate.metadata may not set ops.platform-operators.io/* labels or annotations: the add-on sets its own keys on the Jobs it creates"
	JobTemplate *batchv1.JobTemplateSpec `json:"jobTemplate,omitempty"`

	// startingDeadlineSeconds is how late, in seconds after schedule, the Job may still be
	// started. Later than that the At is Failed with reason MissedDeadline instead of running
	// hours late (for example after the manager was down). Unset means no deadline.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="startingDeadlineSeconds must be at least 1: 0 would never run"
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
}

// AtStatus is what the controller observed.
type AtStatus struct {
	// conditions report the state: Succeeded (True when the Job completed, False when it failed or was too late,
	// Unknown while waiting or running), and InvalidSpec problems the schema cannot catch. Stalled is True with
	// Succeeded's reason while the phase is Failed (kstatus reads it), and absent otherwise.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is Pending, Running, Succeeded or Failed.
	// +optional
	Phase AtPhase `json:"phase,omitempty"` //nolint:kubeapilinter // nophase: the At's phase is its API (DESIGN.md: Pending, Running, Succeeded, Failed); the Succeeded condition carries the same

	// jobName is the name of the Job that runs (or ran) the command, in the At's namespace.
	// +optional
	JobName string `json:"jobName,omitempty"`

	// scheduledTime is the instant the At runs at: schedule, or localTime read in timeZone.
	// +optional
	ScheduledTime *metav1.Time `json:"scheduledTime,omitempty"`

	// startTime is when the Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the Job finished (succeeded or failed), or when the start was
	// found to be too late.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// message says, for people, why the At is in its phase.
	// +optional
	Message string `json:"message,omitempty"`
}

// At runs a command (or a Job template) once, at a given time, as a Job it owns.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=atj,categories=platform-operators
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="name must be at most 52 characters: the Job gets a suffix of up to 11 characters and Job names are limited to 63"
// +kubebuilder:printcolumn:name="Runs At",type=string,JSONPath=`.status.scheduledTime`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=`.status.jobName`
// +kubebuilder:printcolumn:name="Completed",type=date,JSONPath=`.status.completionTime`
// +kubebuilder:printcolumn:name="Command",type=string,JSONPath=`.spec.command`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type At struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what to run and when.
	// +required
	Spec AtSpec `json:"spec"` //nolint:kubeapilinter // nonpointerstructs: spec is required; its CEL rule asks for one of schedule and localTime, so neither field can be marked required
	// status is what the controller observed.
	// +optional
	Status AtStatus `json:"status,omitempty"`
}

// AtList is a list of At.
// +kubebuilder:object:root=true
type AtList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []At `json:"items"`
}

func init() {
	register(&At{}, &AtList{})
}
