package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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

// RunResult is how a run of a ScheduledJob ended (or that it has not yet).
// +kubebuilder:validation:Enum=Running;Waiting;Succeeded;Failed;Skipped;Deleted
type RunResult string

const (
	// RunRunning: the Job is running.
	RunRunning RunResult = "Running"
	// RunWaiting: the Job exists and has not started or was held again: suspended (reason
	// JobSuspended: a queue such as Kueue holds it), or managed by another controller that has
	// not reported it started (reason ManagedElsewhere: spec.managedBy). Like Running, it is
	// active and has no result yet.
	RunWaiting RunResult = "Waiting"
	// RunSucceeded: the Job completed.
	RunSucceeded RunResult = "Succeeded"
	// RunFailed: the Job failed, or the API server refused to create it (reason JobRejected,
	// message the API server's).
	RunFailed RunResult = "Failed"
	// RunSkipped: the slot got no Job (reason says why: MissedDeadline, JobAlreadyActive, Suspended).
	RunSkipped RunResult = "Skipped"
	// RunDeleted: the Job was deleted before it finished (by concurrencyPolicy Replace or a user).
	RunDeleted RunResult = "Deleted"
)

// ScheduledJobRun is one run of a ScheduledJob, or one slot that got no run.
type ScheduledJobRun struct {
	// scheduledTime is the slot (or the run-now request's time).
	// +required
	ScheduledTime metav1.Time `json:"scheduledTime"`
	// jobName is the run's Job; empty for a skipped slot.
	// +optional
	JobName string `json:"jobName,omitempty"`
	// startTime is when the Job started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// completionTime is when the Job succeeded or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// result is Running, Waiting, Succeeded, Failed, Skipped or Deleted.
	// +required
	Result RunResult `json:"result"`
	// reason says why a slot was skipped (MissedDeadline, JobAlreadyActive, Suspended), that
	// its Job was refused by the API server (JobRejected, with result Failed), why its Job
	// waits (JobSuspended, ManagedElsewhere, with result Waiting), or, once its Job finished, the
	// reason of the Job's Complete or Failed condition (CompletionsReached, SuccessPolicy;
	// BackoffLimitExceeded, PodFailurePolicy, FailedIndexes, MaxFailedIndexesExceeded,
	// DeadlineExceeded), cut to 128 characters.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message is the API server's refusal of the run's Job (an admission webhook, a
	// ValidatingAdmissionPolicy, a ResourceQuota, an invalid template), for a Waiting run what
	// holds its Job (the queue, the controller that manages it), or the message of a finished
	// Job's Complete or Failed condition; cut to 1024 characters; empty otherwise.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// StopStrategy says when a ScheduledJob suspends itself (sets spec.suspend to true), read from
// the run history (status.runs) the controller records.
// +kubebuilder:validation:XValidation:rule="has(self.afterFailures) || has(self.afterSuccesses)",message="stopStrategy needs afterFailures or afterSuccesses (or both)"
type StopStrategy struct {
	// afterFailures suspends the ScheduledJob after this many consecutive failed runs (result
	// Failed in status.runs: the Job failed, or the API server refused to create it), counting
	// only runs scheduled after status.stopCountAfter (the last suspension): a resumed
	// ScheduledJob is not stopped again for the failures that stopped it. Skipped, Deleted and
	// Running runs neither count nor break the streak; a Succeeded run starts it over. The
	// controller sets spec.suspend to true, Ready False with reason StoppedAfterFailures and
	// one Warning Event; setting spec.suspend back to false resumes it. 1 to 50, and at most
	// runHistoryLimit (the runs are counted in status.runs).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	AfterFailures *int32 `json:"afterFailures,omitempty"`

	// afterSuccesses suspends the ScheduledJob after this many consecutive successful runs,
	// counted as afterFailures counts failures: 1 runs a job on its schedule until it has
	// succeeded once (a retry every 10 minutes until a migration or a report works). The
	// controller sets spec.suspend to true, Ready True with reason StoppedAfterSuccesses and
	// one Normal Event. 1 to 50, and at most runHistoryLimit.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	AfterSuccesses *int32 `json:"afterSuccesses,omitempty"`
}

// ScheduledJobSpec has the fields of batch/v1 CronJob.
// +kubebuilder:validation:XValidation:rule="has(self.schedule) != has(self.schedules)",message="exactly one of schedule or schedules must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.stopStrategy) || ((!has(self.stopStrategy.afterFailures) || self.stopStrategy.afterFailures <= (has(self.runHistoryLimit) ? self.runHistoryLimit : 10)) && (!has(self.stopStrategy.afterSuccesses) || self.stopStrategy.afterSuccesses <= (has(self.runHistoryLimit) ? self.runHistoryLimit : 10)))",message="stopStrategy.afterFailures and stopStrategy.afterSuccesses must be at most runHistoryLimit (default 10): the runs are counted in status.runs, which keeps that many"
type ScheduledJobSpec struct {
	// schedule is a cron expression: five fields (minute hour day-of-month month day-of-week,
	// e.g. "*/5 * * * *"), or @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly,
	// or "@every <duration>" (a Go duration that is a whole number of minutes, at least 1m, such
	// as 5m, 90m or 1h30m: runs start at most once a minute). Each field is *, ?, a value,
	// a range a-b (a <= b), a step */n, a-b/n or a/n, or a comma-separated list of these; minute
	// 0-59, hour 0-23, day-of-month 1-31, month 1-12 or JAN-DEC, day-of-week 0-6 or SUN-SAT
	// (names in any case; Sunday is 0, not 7). The time zone is timeZone, not a TZ= prefix.
	// Admission refuses what the controller's parser (robfig/cron ParseStandard) refuses, one
	// message per field; a schedule that parses but never fires (30 February) is reported by
	// the controller in the Ready condition. Exactly one of schedule and schedules is set.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule=`!self.contains('TZ=')`,message=`set the time zone in spec.timeZone (e.g. timeZone: Europe/Berlin), not TZ= or CRON_TZ= in the schedule`
	// +kubebuilder:validation:XValidation:rule=`self.contains('TZ=') || self.matches('^[\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]*@') || self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() == 5`,messageExpression=`self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() == 0 ? 'schedule is empty' : 'schedule must be five cron fields (minute hour day-of-month month day-of-week) or a descriptor such as @daily or @every 1h, not ' + (self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() == 1 ? '1 field' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() == 2 ? '2 fields' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() == 3 ? '3 fields' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() == 4 ? '4 fields' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() == 6 ? '6 fields' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() == 7 ? '7 fields' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() == 8 ? '8 fields' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() == 9 ? '9 fields' : 'more than 9 fields')`,message=`schedule must have five fields (minute hour day-of-month month day-of-week) or be a descriptor such as @daily or @every 1h`
	// +kubebuilder:validation:XValidation:rule=`self.contains('TZ=') || !self.matches('^[\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]*@') || self.matches('^[\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]*(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every [-+]?(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|\\x{B5}s|\\x{3BC}s|ms|s|m|h))+))[\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]*$')`,message=`unknown descriptor: use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly (lower case) or @every <duration> (one space, then a Go duration such as 90m or 1h30m)`
	// +kubebuilder:validation:XValidation:rule=`self.contains('TZ=') || self.matches('^[\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]*@') || self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() != 5 || (self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[0].lowerAscii().split(',').exists(r, r != '') && self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[0].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?0*[1-5]?[0-9])(-(\\+?0*[1-5]?[0-9]))?)(/\\+?0*[1-9][0-9]{0,18})?$') && (!r.matches('/\\+?0*[1-9][0-9]{18}$') || r.split('/')[1].find('[1-9][0-9]*') <= '9223372036854775807') && (!r.matches('^[^*?][^/]*-') || int(r.split('/')[0].split('-')[0]) <= int(r.split('/')[0].split('-')[1]))))`,messageExpression=`'minute field "' + self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[0] + '" ' + (!self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[0].lowerAscii().split(',').exists(r, r != '') ? 'has no value' : !self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[0].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?[0-9]+)(-(\\+?[0-9]+))?)(/\\+?[0-9]+)?$')) ? 'is not valid: use *, ?, a value (0-59), a range a-b, a step */n, a-b/n or a/n, or a comma-separated list of these' : !self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[0].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?0*[1-5]?[0-9])(-(\\+?0*[1-5]?[0-9]))?)(/\\+?[0-9]+)?$')) ? 'is out of range 0-59' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[0].lowerAscii().split(',').exists(r, r.matches('/\\+?0+$')) ? 'has a step of 0: a step must be at least 1' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[0].lowerAscii().split(',').exists(r, r.matches('^[^*?][^/]*-') && int(r.split('/')[0].split('-')[0]) > int(r.split('/')[0].split('-')[1])) ? 'has a range whose start is after its end' : 'has a step that is too large')`,message=`minute field is not valid (values 0-59)`
	// +kubebuilder:validation:XValidation:rule=`self.contains('TZ=') || self.matches('^[\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]*@') || self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() != 5 || (self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[1].lowerAscii().split(',').exists(r, r != '') && self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[1].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?0*(1?[0-9]|2[0-3]))(-(\\+?0*(1?[0-9]|2[0-3])))?)(/\\+?0*[1-9][0-9]{0,18})?$') && (!r.matches('/\\+?0*[1-9][0-9]{18}$') || r.split('/')[1].find('[1-9][0-9]*') <= '9223372036854775807') && (!r.matches('^[^*?][^/]*-') || int(r.split('/')[0].split('-')[0]) <= int(r.split('/')[0].split('-')[1]))))`,messageExpression=`'hour field "' + self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[1] + '" ' + (!self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[1].lowerAscii().split(',').exists(r, r != '') ? 'has no value' : !self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[1].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?[0-9]+)(-(\\+?[0-9]+))?)(/\\+?[0-9]+)?$')) ? 'is not valid: use *, ?, a value (0-23), a range a-b, a step */n, a-b/n or a/n, or a comma-separated list of these' : !self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[1].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?0*(1?[0-9]|2[0-3]))(-(\\+?0*(1?[0-9]|2[0-3])))?)(/\\+?[0-9]+)?$')) ? 'is out of range 0-23' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[1].lowerAscii().split(',').exists(r, r.matches('/\\+?0+$')) ? 'has a step of 0: a step must be at least 1' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[1].lowerAscii().split(',').exists(r, r.matches('^[^*?][^/]*-') && int(r.split('/')[0].split('-')[0]) > int(r.split('/')[0].split('-')[1])) ? 'has a range whose start is after its end' : 'has a step that is too large')`,message=`hour field is not valid (values 0-23)`
	// +kubebuilder:validation:XValidation:rule=`self.contains('TZ=') || self.matches('^[\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]*@') || self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() != 5 || (self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[2].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?0*([1-9]|[12][0-9]|3[01]))(-(\\+?0*([1-9]|[12][0-9]|3[01])))?)(/\\+?0*[1-9][0-9]{0,18})?$') && (!r.matches('/\\+?0*[1-9][0-9]{18}$') || r.split('/')[1].find('[1-9][0-9]*') <= '9223372036854775807') && (!r.matches('^[^*?][^/]*-') || int(r.split('/')[0].split('-')[0]) <= int(r.split('/')[0].split('-')[1]))))`,messageExpression=`'day-of-month field "' + self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[2] + '" ' + (!self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[2].lowerAscii().split(',').exists(r, r != '') ? 'has no value' : !self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[2].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?[0-9]+)(-(\\+?[0-9]+))?)(/\\+?[0-9]+)?$')) ? 'is not valid: use *, ?, a value (1-31), a range a-b, a step */n, a-b/n or a/n, or a comma-separated list of these' : !self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[2].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?0*([1-9]|[12][0-9]|3[01]))(-(\\+?0*([1-9]|[12][0-9]|3[01])))?)(/\\+?[0-9]+)?$')) ? 'is out of range 1-31' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[2].lowerAscii().split(',').exists(r, r.matches('/\\+?0+$')) ? 'has a step of 0: a step must be at least 1' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[2].lowerAscii().split(',').exists(r, r.matches('^[^*?][^/]*-') && int(r.split('/')[0].split('-')[0]) > int(r.split('/')[0].split('-')[1])) ? 'has a range whose start is after its end' : 'has a step that is too large')`,message=`day-of-month field is not valid (values 1-31)`
	// +kubebuilder:validation:XValidation:rule=`self.contains('TZ=') || self.matches('^[\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]*@') || self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() != 5 || (self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[3].lowerAscii().split(',').exists(r, r != '') && self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[3].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?0*([1-9]|1[0-2])|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(\\+?0*([1-9]|1[0-2])|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/\\+?0*[1-9][0-9]{0,18})?$') && (!r.matches('/\\+?0*[1-9][0-9]{18}$') || r.split('/')[1].find('[1-9][0-9]*') <= '9223372036854775807') && (!r.matches('^[^*?][^/]*-') || (r.split('/')[0].split('-')[0] in {'jan': 1, 'feb': 2, 'mar': 3, 'apr': 4, 'may': 5, 'jun': 6, 'jul': 7, 'aug': 8, 'sep': 9, 'oct': 10, 'nov': 11, 'dec': 12} ? {'jan': 1, 'feb': 2, 'mar': 3, 'apr': 4, 'may': 5, 'jun': 6, 'jul': 7, 'aug': 8, 'sep': 9, 'oct': 10, 'nov': 11, 'dec': 12}[r.split('/')[0].split('-')[0]] : int(r.split('/')[0].split('-')[0])) <= (r.split('/')[0].split('-')[1] in {'jan': 1, 'feb': 2, 'mar': 3, 'apr': 4, 'may': 5, 'jun': 6, 'jul': 7, 'aug': 8, 'sep': 9, 'oct': 10, 'nov': 11, 'dec': 12} ? {'jan': 1, 'feb': 2, 'mar': 3, 'apr': 4, 'may': 5, 'jun': 6, 'jul': 7, 'aug': 8, 'sep': 9, 'oct': 10, 'nov': 11, 'dec': 12}[r.split('/')[0].split('-')[1]] : int(r.split('/')[0].split('-')[1])))))`,messageExpression=`'month field "' + self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[3] + '" ' + (!self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[3].lowerAscii().split(',').exists(r, r != '') ? 'has no value' : !self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[3].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?[0-9]+|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(\\+?[0-9]+|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/\\+?[0-9]+)?$')) ? 'is not valid: use *, ?, a value (1-12 or JAN-DEC), a range a-b, a step */n, a-b/n or a/n, or a comma-separated list of these' : !self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[3].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?0*([1-9]|1[0-2])|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)(-(\\+?0*([1-9]|1[0-2])|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))?)(/\\+?[0-9]+)?$')) ? 'is out of range 1-12 or JAN-DEC' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[3].lowerAscii().split(',').exists(r, r.matches('/\\+?0+$')) ? 'has a step of 0: a step must be at least 1' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[3].lowerAscii().split(',').exists(r, r.matches('^[^*?][^/]*-') && (r.split('/')[0].split('-')[0] in {'jan': 1, 'feb': 2, 'mar': 3, 'apr': 4, 'may': 5, 'jun': 6, 'jul': 7, 'aug': 8, 'sep': 9, 'oct': 10, 'nov': 11, 'dec': 12} ? {'jan': 1, 'feb': 2, 'mar': 3, 'apr': 4, 'may': 5, 'jun': 6, 'jul': 7, 'aug': 8, 'sep': 9, 'oct': 10, 'nov': 11, 'dec': 12}[r.split('/')[0].split('-')[0]] : int(r.split('/')[0].split('-')[0])) > (r.split('/')[0].split('-')[1] in {'jan': 1, 'feb': 2, 'mar': 3, 'apr': 4, 'may': 5, 'jun': 6, 'jul': 7, 'aug': 8, 'sep': 9, 'oct': 10, 'nov': 11, 'dec': 12} ? {'jan': 1, 'feb': 2, 'mar': 3, 'apr': 4, 'may': 5, 'jun': 6, 'jul': 7, 'aug': 8, 'sep': 9, 'oct': 10, 'nov': 11, 'dec': 12}[r.split('/')[0].split('-')[1]] : int(r.split('/')[0].split('-')[1]))) ? 'has a range whose start is after its end' : 'has a step that is too large')`,message=`month field is not valid (values 1-12 or JAN-DEC)`
	// +kubebuilder:validation:XValidation:rule=`self.contains('TZ=') || self.matches('^[\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]*@') || self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+').size() != 5 || (self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[4].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?0*[0-6]|sun|mon|tue|wed|thu|fri|sat)(-(\\+?0*[0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/\\+?0*[1-9][0-9]{0,18})?$') && (!r.matches('/\\+?0*[1-9][0-9]{18}$') || r.split('/')[1].find('[1-9][0-9]*') <= '9223372036854775807') && (!r.matches('^[^*?][^/]*-') || (r.split('/')[0].split('-')[0] in {'sun': 0, 'mon': 1, 'tue': 2, 'wed': 3, 'thu': 4, 'fri': 5, 'sat': 6} ? {'sun': 0, 'mon': 1, 'tue': 2, 'wed': 3, 'thu': 4, 'fri': 5, 'sat': 6}[r.split('/')[0].split('-')[0]] : int(r.split('/')[0].split('-')[0])) <= (r.split('/')[0].split('-')[1] in {'sun': 0, 'mon': 1, 'tue': 2, 'wed': 3, 'thu': 4, 'fri': 5, 'sat': 6} ? {'sun': 0, 'mon': 1, 'tue': 2, 'wed': 3, 'thu': 4, 'fri': 5, 'sat': 6}[r.split('/')[0].split('-')[1]] : int(r.split('/')[0].split('-')[1])))))`,messageExpression=`'day-of-week field "' + self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[4] + '" ' + (!self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[4].lowerAscii().split(',').exists(r, r != '') ? 'has no value' : !self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[4].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?[0-9]+|sun|mon|tue|wed|thu|fri|sat)(-(\\+?[0-9]+|sun|mon|tue|wed|thu|fri|sat))?)(/\\+?[0-9]+)?$')) ? 'is not valid: use *, ?, a value (0-6 or SUN-SAT), a range a-b, a step */n, a-b/n or a/n, or a comma-separated list of these' : !self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[4].lowerAscii().split(',').all(r, r == '' || r.matches('^([*?](-[^/]*)?|(\\+?0*[0-6]|sun|mon|tue|wed|thu|fri|sat)(-(\\+?0*[0-6]|sun|mon|tue|wed|thu|fri|sat))?)(/\\+?[0-9]+)?$')) ? 'is out of range 0-6 or SUN-SAT' + (self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[4].matches('(^|[-,])\\+?0*7($|[-,/])') ? ' (Sunday is 0 or SUN, not 7)' : '') : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[4].lowerAscii().split(',').exists(r, r.matches('/\\+?0+$')) ? 'has a step of 0: a step must be at least 1' : self.findAll('[^\\s\\v\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}]+')[4].lowerAscii().split(',').exists(r, r.matches('^[^*?][^/]*-') && (r.split('/')[0].split('-')[0] in {'sun': 0, 'mon': 1, 'tue': 2, 'wed': 3, 'thu': 4, 'fri': 5, 'sat': 6} ? {'sun': 0, 'mon': 1, 'tue': 2, 'wed': 3, 'thu': 4, 'fri': 5, 'sat': 6}[r.split('/')[0].split('-')[0]] : int(r.split('/')[0].split('-')[0])) > (r.split('/')[0].split('-')[1] in {'sun': 0, 'mon': 1, 'tue': 2, 'wed': 3, 'thu': 4, 'fri': 5, 'sat': 6} ? {'sun': 0, 'mon': 1, 'tue': 2, 'wed': 3, 'thu': 4, 'fri': 5, 'sat': 6}[r.split('/')[0].split('-')[1]] : int(r.split('/')[0].split('-')[1]))) ? 'has a range whose start is after its end' : 'has a step that is too large')`,message=`day-of-week field is not valid (values 0-6 or SUN-SAT)`
	// +kubebuilder:validation:XValidation:rule=`!self.trim().startsWith('@every ') || !self.trim().substring(7).matches('^[-+]?(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|\\x{B5}s|\\x{3BC}s|ms|s|m|h))+)$') || (duration(self.trim().substring(7)) >= duration('1m') && timestamp(0) + duration(self.trim().substring(7)) == timestamp(duration(self.trim().substring(7)).getMinutes() * 60))`,message=`@every needs a whole number of minutes, at least 1m (e.g. @every 5m, @every 90m or @every 1h30m): runs start at most once a minute`
	Schedule string `json:"schedule,omitempty"`

	// schedules are several cron expressions, each written as schedule is, read in the same
	// timeZone (as Argo CronWorkflow's schedules): the ScheduledJob runs at the slots of any of
	// them, once per slot: a minute two of them share is one run. Admission checks each one's
	// shape, that it names no TZ= and that an @every is a whole number of minutes; a field the parser refuses is reported by the controller
	// (Ready False, InvalidSchedule, naming schedules[i]). Exactly one of schedule and
	// schedules is set.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.all(s, !s.contains('TZ='))",message="set the time zone in spec.timeZone (e.g. timeZone: Europe/Berlin), not TZ= or CRON_TZ= in schedules"
	// +kubebuilder:validation:XValidation:rule="self.all(s, s.trim().startsWith('@') || s.trim().split(' ').filter(f, f != '').size() == 5)",message="each of schedules is five fields (minute hour day-of-month month day-of-week) or an @-descriptor"
	// +kubebuilder:validation:XValidation:rule=`self.all(s, !s.trim().startsWith('@every ') || !s.trim().substring(7).matches('^[-+]?(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|\\x{B5}s|\\x{3BC}s|ms|s|m|h))+)$') || (duration(s.trim().substring(7)) >= duration('1m') && timestamp(0) + duration(s.trim().substring(7)) == timestamp(duration(s.trim().substring(7)).getMinutes() * 60)))`,message=`each @every in schedules needs a whole number of minutes, at least 1m (e.g. @every 5m, @every 90m or @every 1h30m): runs start at most once a minute`
	Schedules []string `json:"schedules,omitempty"`

	// timeZone is the IANA time zone the schedule is read in, e.g. "Europe/Berlin". Default:
	// UTC. An unknown zone is reported in the Ready condition and an Event, and nothing runs
	// until it is fixed.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$')`,message=`timeZone must be an IANA time zone name such as Europe/Berlin, America/Argentina/Buenos_Aires, Etc/GMT+5 or UTC: letters, digits, _ + - and single / between parts`
	// +kubebuilder:validation:XValidation:rule=`self.lowerAscii() != 'local'`,message=`timeZone must name a zone, not Local (the manager's own zone): use an IANA name such as Europe/Berlin`
	TimeZone *string `json:"timeZone,omitempty"`

	// jitter spreads the start of this ScheduledJob's runs: each run starts a fixed offset in
	// [0, jitter) after its slot, the same offset for this object every time (derived from its
	// namespace and name), different across objects, so a thousand "0 * * * *" schedules do not
	// start in the same second. The slot stays the run's identity (Job name, lastScheduleTime,
	// SCHEDULED_TIME); status.nextScheduleTime shows the effective start, and
	// startingDeadlineSeconds counts from it. At most 1h. Unset: no jitter.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="jitter must be a duration between 0s and 1h, e.g. 5m"
	Jitter *metav1.Duration `json:"jitter,omitempty"` //nolint:kubeapilinter // nodurations: v1alpha1 keeps the duration string users write (5m); a next API version would take jitterSeconds

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
	// while suspended are skipped with an Event. The controller sets it to true when
	// stopStrategy says so; setting it back to false resumes the ScheduledJob.
	// +optional
	// +kubebuilder:default=false
	Suspend *bool `json:"suspend,omitempty"`

	// jobTemplate is the Job each run creates. Its metadata may not carry keys of the add-on
	// (ops.platform-operators.io/*): the add-on's own keys on the Job are its alone.
	// +required
	// +kubebuilder:validation:XValidation:rule="!has(self.metadata) || ((!has(self.metadata.labels) || self.metadata.labels.all(k, !k.startsWith('ops.platform-operators.io/'))) && (!has(self.metadata.annotations) || self.metadata.annotations.all(k, !k.startsWith('ops.platform-operators.io/'))))",message="jobTemplate.metadata may not set ops.platform-operators.io/* labels or annotations: the add-on sets its own keys on the Jobs it creates"
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

	// runHistoryLimit is how many runs status.runs lists, newest first: each slot's scheduled
	// time, Job, start, end and result, kept after the Job itself is pruned by the history
	// limits above. 0 lists none. Default 10.
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=50
	RunHistoryLimit *int32 `json:"runHistoryLimit,omitempty"`

	// stopStrategy suspends the ScheduledJob after a number of consecutive failed (or
	// successful) runs, as Argo's CronWorkflow stopStrategy does: the controller sets
	// spec.suspend to true, and a user resumes it by setting it back to false. Unset: never.
	// +optional
	StopStrategy *StopStrategy `json:"stopStrategy,omitempty"`
}

// ScheduledJobStatus is what the controller observed.
type ScheduledJobStatus struct {
	// conditions report the state: Ready is False with reason InvalidSchedule, UnknownTimeZone or
	// ScheduleNeverFires when the spec cannot run, JobRejected while the API server refuses
	// the latest slot's Job (admission or an invalid template), or StoppedAfterFailures while
	// spec.stopStrategy.afterFailures keeps it suspended; True otherwise (reason Scheduled,
	// Suspended, or StoppedAfterSuccesses). Stalled is True
	// with the same reason while Ready is False (kstatus reads it), and absent otherwise.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

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

	// runs are the last runs (spec.runHistoryLimit), newest first: what ran when and how it
	// ended, including slots that were skipped. They stay after the Jobs are pruned.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Runs []ScheduledJobRun `json:"runs,omitempty"`

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

	// lastRunNowTime is when the last run-now Job was created (or refused by the API server): a
	// newer run-now token waits until a minute after it (at most one run-now Job a minute).
	// +optional
	LastRunNowTime *metav1.Time `json:"lastRunNowTime,omitempty"`

	// runNowWaiting is the run-now token waiting for the minute after lastRunNowTime to pass,
	// announced once with a RunNowDelayed Event; empty when none waits.
	// +optional
	RunNowWaiting string `json:"runNowWaiting,omitempty"`

	// scheduleSummary is what kubectl get shows as SCHEDULE: spec.schedule, or spec.schedules
	// joined with " | " (beyond 128 characters, the first of them and "(+N more)"), so the
	// column is filled whichever of the two is set (a printer column cannot fall back from one
	// field to another). The controller writes it only when it changes.
	// +optional
	// +kubebuilder:validation:MaxLength=160
	ScheduleSummary string `json:"scheduleSummary,omitempty"`

	// stopCountAfter is where spec.stopStrategy starts counting: only runs scheduled after it
	// count. While the ScheduledJob is suspended (by a user, or by its stopStrategy) the
	// controller moves it to the newest run recorded, so after a resume only new runs count
	// and the failures that stopped it do not stop it again.
	// +optional
	StopCountAfter *metav1.Time `json:"stopCountAfter,omitempty"`

	// backfill is the progress of the last backfill asked for with the
	// ops.platform-operators.io/backfill annotation; unset until one is asked for.
	// +optional
	Backfill *BackfillStatus `json:"backfill,omitempty"`

	// notRun is the ledger of the scheduled slots that got no Job (skipped, refused, passed over
	// while the manager was stopped or the ScheduledJob suspended), as ranges of consecutive
	// slots, newest first, at most 20: what a backfill may run. A slot since creation up to
	// lastScheduleTime that it does not list ran (or was backfilled since).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	NotRun []SlotRange `json:"notRun,omitempty"`

	// notRunKnownAfter is set once notRun dropped its oldest range to stay within its bound:
	// whether a slot at or before it ran is no longer known, and a backfill does not run it.
	// +optional
	NotRunKnownAfter *metav1.Time `json:"notRunKnownAfter,omitempty"`

	// backfilled are the ranges whose slots backfills have dealt with (run, found run, or
	// refused), merged, newest first, at most 10: a later backfill over them runs none again.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Backfilled []SlotRange `json:"backfilled,omitempty"`

	// activeCount is how many Jobs of this ScheduledJob have not finished; active lists at most
	// 5 of them.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ActiveCount int32 `json:"activeCount,omitempty"`

	// stop is set while spec.stopStrategy holds the ScheduledJob stopped: no new Jobs are created
	// until the spec changes (metadata.generation moves past stop.generation).
	// +optional
	Stop *StopRecord `json:"stop,omitempty"`
}

// SlotRange is a range of consecutive slots, first and last included.
type SlotRange struct {
	// first is the first slot of the range.
	// +required
	First metav1.Time `json:"first"`
	// last is the last slot of the range (first for a single slot).
	// +required
	Last metav1.Time `json:"last"`
	// reason says why the slots got no Job (MissedSlots, TooManyMissedTimes, Suspended,
	// Stopped, JobAlreadyActive, MissedDeadline, JobRejected); empty in backfilled.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`
}

// StopRecord is the stop strategy's stop: why, and the spec generation it holds for.
type StopRecord struct {
	// reason is StoppedAfterFailures or StoppedAfterSuccesses.
	// +required
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`
	// generation is the metadata.generation that was stopped: a spec change resumes.
	// +required
	Generation int64 `json:"generation"`
	// time is when the stop was recorded.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// BackfillPhase is where a backfill stands.
// +kubebuilder:validation:Enum=Running;Finished;Refused;Cancelled
type BackfillPhase string

const (
	// BackfillRunning: slots of the range are still to get their Job.
	BackfillRunning BackfillPhase = "Running"
	// BackfillFinished: every slot of the range got its Job (or had one already, or its Job was
	// refused by the API server); the Jobs may still be running.
	BackfillFinished BackfillPhase = "Finished"
	// BackfillRefused: the request is invalid or out of bounds (message says why); nothing ran.
	BackfillRefused BackfillPhase = "Refused"
	// BackfillCancelled: the annotation was removed before every slot got its Job.
	BackfillCancelled BackfillPhase = "Cancelled"
)

// BackfillStatus is the progress of one backfill request: the schedule's slots in [from, to),
// each run once as its own Job (named <name>-b<unix minutes of the slot>-<uid tag>).
type BackfillStatus struct {
	// request is the annotation's value this status is about; a value over 128 characters
	// (always refused) is kept as its sha256 digest.
	// +required
	// +kubebuilder:validation:MaxLength=128
	Request string `json:"request"`
	// phase is Running, Finished, Refused or Cancelled.
	// +required
	Phase BackfillPhase `json:"phase"` //nolint:kubeapilinter // nophase: a request's progress, read with one jsonpath by a script that waits for it; the Backfill condition carries the same
	// from is the start of the range (inclusive).
	// +optional
	From *metav1.Time `json:"from,omitempty"`
	// to is the end of the range (exclusive).
	// +optional
	To *metav1.Time `json:"to,omitempty"`
	// startTime is when the controller accepted the request.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// schedule is the schedule and time zone the range's slots were computed from at acceptance
	// (status.observedSchedule then; its sha256 when longer than 128 characters): an edit of
	// either cancels a running backfill.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Schedule string `json:"schedule,omitempty"`
	// slots is how many of the schedule's slots fall in the range (at most 100).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Slots int32 `json:"slots,omitempty"`
	// done is how many of the slots are dealt with: given a Job by this backfill, found with a
	// Job already (a scheduled run, an earlier backfill), or refused by the API server.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Done int32 `json:"done,omitempty"`
	// created is how many Jobs this backfill created.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Created int32 `json:"created,omitempty"`
	// nextSlot is the next slot the backfill runs; unset once it is no longer Running.
	// +optional
	NextSlot *metav1.Time `json:"nextSlot,omitempty"`
	// lastCreateTime is when this backfill last created a Job: the next one is created at
	// least 10 seconds later.
	// +optional
	LastCreateTime *metav1.Time `json:"lastCreateTime,omitempty"`
	// message says why the request was refused, or what the backfill waits for.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// ScheduledJob creates Jobs on a cron schedule, like batch/v1 CronJob (same fields and
// semantics), plus nextScheduleTime, skipped-slot Events and metrics, run-now, and no
// retroactive run when the schedule is edited.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=sj,categories=platform-operators
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52",message="name must be at most 52 characters: Job names get an 11-character suffix and are limited to 63"
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.status.scheduleSummary`
// +kubebuilder:printcolumn:name="Timezone",type=string,JSONPath=`.spec.timeZone`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Schedule",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Last Result",type=string,JSONPath=`.status.runs[0].result`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessfulTime`
// +kubebuilder:printcolumn:name="Next Schedule",type=string,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ScheduledJob struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
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
	register(&ScheduledJob{}, &ScheduledJobList{})
}
