package v1alpha1_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/schedule"
)

// scheduleCase is one spec.schedule and what admission must say about it. want is "" for a
// schedule admission accepts, else a fragment of the message (which names the field).
// neverFires marks a schedule admission accepts because only the calendar can refuse it: the
// controller's parser reports it as ErrNeverFires.
type scheduleCase struct {
	schedule   string
	want       string
	neverFires bool
}

// everyMinutes is the message refusing an @every that is not a whole number of minutes.
const everyMinutes = "@every needs a whole number of minutes, at least 1m"

// scheduleCases is the table shared by the envtest (admission) and the in-step test (the
// controller's parser). Every form users write, each with a valid and an invalid example.
var scheduleCases = []scheduleCase{
	// Accepted: single values at both ends of every field, names in any case.
	{schedule: "*/5 * * * *"},
	{schedule: "0 0 1 1 0"},
	{schedule: "59 23 31 12 6"},
	{schedule: "0 9 * JAN-MAR MON-FRI"},
	{schedule: "0 9 * jan-mar mon-fri"},
	{schedule: "0 9 * Jan,Jul Sun,Sat"},
	{schedule: "0 9 * dec sun"},
	{schedule: "? ? ? ? ?"},
	{schedule: "0 12 ? * MON"},
	{schedule: "0 0 1 * ?"},
	{schedule: "1-59 0-23 1-31 1-12 0-6"},
	{schedule: "5-5 * * * *"},
	{schedule: "*/1 * * * *"},
	{schedule: "*/59 */23 */31 */12 */6"},
	{schedule: "*/60 * * * *"}, // robfig: a step beyond the range selects only the start
	{schedule: "0-30/10 * * * *"},
	{schedule: "10/15 * * * *"},
	{schedule: "0 0 * * MON/2"},
	{schedule: "0 0 * FEB-NOV/3 *"},
	{schedule: "0,15,30,45 * * * *"},
	{schedule: "0,10-20/2,*/30 * * * *"},
	{schedule: "1,,2 * * * *"},   // robfig skips empty list items
	{schedule: ",5 * * * *"},     // robfig skips empty list items
	{schedule: "05 09 01 01 00"}, // leading zeros
	{schedule: "+5 +9 * * *"},    // strconv.Atoi accepts a plus sign
	{schedule: "*/+5 * * * *"},
	{schedule: "*/0000000000000000000000005 * * * *"},
	{schedule: "*/9223372036854775807 * * * *"},
	{schedule: "*-5 * * * *"},   // robfig: * ignores what follows a hyphen
	{schedule: "*-x/5 * * * *"}, // likewise
	{schedule: "  0 9 * * *  "},
	{schedule: "0\t9\t*\t*\t*"},
	{schedule: "0\u00a09 * * *"}, // strings.Fields splits on every Unicode space
	// An empty day-of-month or day-of-week: robfig ORs the two when neither starts with * or ?,
	// so the other one alone decides; with a * next to it, it never fires.
	{schedule: "0 0 , * MON"},
	{schedule: "0 0 1 * ,"},
	{schedule: "0 0 , * *", neverFires: true},
	{schedule: "0 0 30 2 *", neverFires: true},
	{schedule: "0 0 31 4 *", neverFires: true},
	{schedule: "0 0 31 APR,JUN *", neverFires: true},
	// Descriptors.
	{schedule: "@yearly"},
	{schedule: "@annually"},
	{schedule: "@monthly"},
	{schedule: "@weekly"},
	{schedule: "@daily"},
	{schedule: "@midnight"},
	{schedule: "@hourly"},
	{schedule: " @hourly "},
	{schedule: "@every 1h"},
	{schedule: "@every 1h30m"},
	{schedule: "@every 1.5h"},
	{schedule: "@every .5h"},
	{schedule: "@every 120s"},
	{schedule: "@every 1m"},
	{schedule: "@every +2m"},
	{schedule: "@every 2562047h"},
	// Runs are per minute (issue 28): a shorter or finer interval would name slots that never
	// get a Job, each one a status write and an Event.
	{schedule: "@every 1s", want: everyMinutes},
	{schedule: "@every 30s", want: everyMinutes},
	{schedule: "@every 59.999s", want: everyMinutes},
	{schedule: "@every 90s", want: everyMinutes},
	{schedule: "@every 1m30s", want: everyMinutes},
	{schedule: "@every 0", want: everyMinutes},    // robfig: less than a second is every second
	{schedule: "@every -1h", want: everyMinutes},  // robfig: likewise
	{schedule: "@every 10µs", want: everyMinutes}, // U+00B5
	{schedule: "@every 10μs", want: everyMinutes}, // U+03BC
	{schedule: "@every 2ms", want: everyMinutes},
	// Beyond Go's time.Duration: CEL's duration() fails, the rule's message is kept.
	{schedule: "@every 2562048h", want: everyMinutes},
	{schedule: "@Daily", want: "unknown descriptor"},
	{schedule: "@DAILY", want: "unknown descriptor"},
	{schedule: "@fortnightly", want: "unknown descriptor"},
	{schedule: "@reboot", want: "unknown descriptor"},
	{schedule: "@every", want: "unknown descriptor"},
	{schedule: "@every ", want: "unknown descriptor"},
	{schedule: "@every 1", want: "unknown descriptor"},
	{schedule: "@every 1d", want: "unknown descriptor"},
	{schedule: "@every 1hm", want: "unknown descriptor"},
	{schedule: "@every .h", want: "unknown descriptor"},
	{schedule: "@every  1h", want: "unknown descriptor"},
	{schedule: "@every\t1h", want: "unknown descriptor"},
	{schedule: "@every 1 h", want: "unknown descriptor"},
	{schedule: "@daily 0", want: "unknown descriptor"},
	{schedule: "@ * * * *", want: "unknown descriptor"},
	// Time zone prefixes.
	{schedule: "TZ=Europe/Berlin 0 9 * * *", want: "set the time zone in spec.timeZone"},
	{schedule: "CRON_TZ=UTC 0 9 * * *", want: "set the time zone in spec.timeZone"},
	{schedule: "CRON_TZ=UTC @daily", want: "spec.timeZone"},
	// Number of fields.
	{schedule: " ", want: "schedule is empty"},
	{schedule: "*", want: "schedule must be five cron fields (minute hour day-of-month month day-of-week) or a descriptor such as @daily or @every 1h, not 1 field"},
	{schedule: "* * * *", want: "not 4 fields"},
	{schedule: "0 0 9 * * *", want: "not 6 fields"},
	{schedule: "every day", want: "not 2 fields"},
	// Minute.
	{schedule: "60 * * * *", want: `minute field "60" is out of range 0-59`},
	{schedule: "61 * * * *", want: `minute field "61" is out of range 0-59`},
	{schedule: "0-60 * * * *", want: `minute field "0-60" is out of range 0-59`},
	{schedule: "5,61 * * * *", want: `minute field "5,61" is out of range 0-59`},
	{schedule: "99999999999999999999 * * * *", want: `minute field "99999999999999999999" is out of range 0-59`},
	{schedule: "30-10 * * * *", want: `minute field "30-10" has a range whose start is after its end`},
	{schedule: "*/0 * * * *", want: `minute field "*/0" has a step of 0`},
	{schedule: "0-30/0 * * * *", want: `minute field "0-30/0" has a step of 0`},
	{schedule: "*/9223372036854775808 * * * *", want: `minute field "*/9223372036854775808" has a step that is too large`},
	{schedule: "*/99999999999999999999 * * * *", want: `minute field "*/99999999999999999999" has a step that is too large`},
	{schedule: "*/-5 * * * *", want: `minute field "*/-5" is not valid`},
	{schedule: "*/ * * * *", want: `minute field "*/" is not valid`},
	{schedule: "*/5/2 * * * *", want: `minute field "*/5/2" is not valid`},
	{schedule: "1-2-3 * * * *", want: `minute field "1-2-3" is not valid`},
	{schedule: "-5 * * * *", want: `minute field "-5" is not valid`},
	{schedule: "5- * * * *", want: `minute field "5-" is not valid`},
	{schedule: "*5 * * * *", want: `minute field "*5" is not valid`},
	{schedule: "L * * * *", want: `minute field "L" is not valid`},
	{schedule: ", * * * *", want: `minute field "," has no value`},
	{schedule: "MON/2 * * * *", want: `minute field "MON/2" is not valid`},
	{schedule: "jan * * * *", want: `minute field "jan" is not valid`},
	{schedule: "1.5 * * * *", want: `minute field "1.5" is not valid`},
	// Hour.
	{schedule: "0 24 * * *", want: `hour field "24" is out of range 0-23`},
	{schedule: "0 9-25 * * *", want: `hour field "9-25" is out of range 0-23`},
	{schedule: "0 17-9 * * *", want: `hour field "17-9" has a range whose start is after its end`},
	{schedule: "0 */0 * * *", want: `hour field "*/0" has a step of 0`},
	{schedule: "0 9h * * *", want: `hour field "9h" is not valid`},
	// Day of month.
	{schedule: "0 0 0 * *", want: `day-of-month field "0" is out of range 1-31`},
	{schedule: "0 0 32 * *", want: `day-of-month field "32" is out of range 1-31`},
	{schedule: "0 0 0-5 * *", want: `day-of-month field "0-5" is out of range 1-31`},
	{schedule: "0 0 20-10 * *", want: `day-of-month field "20-10" has a range whose start is after its end`},
	{schedule: "0 0 L * *", want: `day-of-month field "L" is not valid`},
	{schedule: "0 0 15W * *", want: `day-of-month field "15W" is not valid`},
	// Month.
	{schedule: "0 0 1 0 *", want: `month field "0" is out of range 1-12 or JAN-DEC`},
	{schedule: "0 0 1 13 *", want: `month field "13" is out of range 1-12 or JAN-DEC`},
	{schedule: "0 0 1 DEC-JAN *", want: `month field "DEC-JAN" has a range whose start is after its end`},
	{schedule: "0 0 1 12-1 *", want: `month field "12-1" has a range whose start is after its end`},
	{schedule: "0 0 1 JANUARY *", want: `month field "JANUARY" is not valid`},
	{schedule: "0 0 1 MON *", want: `month field "MON" is not valid`},
	// Day of week.
	{schedule: "0 0 * * 7", want: `day-of-week field "7" is out of range 0-6 or SUN-SAT (Sunday is 0 or SUN, not 7)`},
	{schedule: "0 0 * * 1-7", want: `day-of-week field "1-7" is out of range 0-6 or SUN-SAT (Sunday is 0 or SUN, not 7)`},
	{schedule: "0 0 * * 8", want: `day-of-week field "8" is out of range 0-6 or SUN-SAT`},
	{schedule: "0 0 * * FRI-MON", want: `day-of-week field "FRI-MON" has a range whose start is after its end`},
	{schedule: "0 0 * * SUNDAY", want: `day-of-week field "SUNDAY" is not valid`},
	{schedule: "0 0 * * JAN", want: `day-of-week field "JAN" is not valid`},
	{schedule: "0 0 * * 1#2", want: `day-of-week field "1#2" is not valid`},
	{schedule: "0 0 * * 5L", want: `day-of-week field "5L" is not valid`},
}

// multiFieldCases have more than one bad field: admission reports each one.
var multiFieldCases = []struct {
	schedule string
	want     []string
}{
	{"61 24 0 13 7", []string{`minute field "61"`, `hour field "24"`, `day-of-month field "0"`, `month field "13"`, `day-of-week field "7"`}},
}

func newScheduledJob(name, ns, sched string, timeZone *string) *v1alpha1.ScheduledJob {
	return &v1alpha1.ScheduledJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.ScheduledJobSpec{
			Schedule: sched,
			TimeZone: timeZone,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}}}},
		},
	}
}

// admissionEnv is one kube-apiserver with the chart's CRDs for all admission tests of this file.
type admissionEnv struct {
	c   client.Client
	ctx context.Context
	ns  string
	n   int
}

func startAdmission(t *testing.T) *admissionEnv {
	t.Helper()
	cfg := testenv.StartAPIServer(t)
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	e := &admissionEnv{c: c, ctx: ctx, ns: "admission"}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}); err != nil {
		t.Fatal(err)
	}
	return e
}

// create creates obj with a fresh name (server-side dry run: nothing is stored) and returns the
// apiserver's error.
func (e *admissionEnv) create(obj client.Object) error {
	e.n++
	obj.SetName(fmt.Sprintf("obj-%d", e.n))
	obj.SetNamespace(e.ns)
	return e.c.Create(e.ctx, obj, client.DryRunAll)
}

// checkRefusal fails unless err is an Invalid error whose message contains every fragment.
func checkRefusal(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want a refusal containing %q", fragments)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("err = %v, want Invalid", err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("message %q does not contain %q", err.Error(), f)
		}
	}
}

func TestAdmission(t *testing.T) {
	e := startAdmission(t)

	t.Run("ScheduledJob schedule", func(t *testing.T) {
		for _, tc := range scheduleCases {
			t.Run(fmt.Sprintf("%q", tc.schedule), func(t *testing.T) {
				err := e.create(newScheduledJob("", "", tc.schedule, nil))
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, "spec.schedule", tc.want)
			})
		}
	})

	t.Run("ScheduledJob schedule with several bad fields names each", func(t *testing.T) {
		for _, tc := range multiFieldCases {
			checkRefusal(t, e.create(newScheduledJob("", "", tc.schedule, nil)), tc.want...)
		}
	})

	// An At whose schedule the API server stores but metav1.Time cannot decode would break the
	// At informer's list for the whole cluster: whatever admission accepts must decode.
	t.Run("ScheduledJob schedules", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			schedule  string
			schedules []string
			want      string
		}{
			{"several", "", []string{"0 9 * * 1-5", "30 12 * * *", "@hourly"}, ""},
			{"both", "0 9 * * *", []string{"0 12 * * *"}, "exactly one of schedule or schedules"},
			{"neither", "", nil, "exactly one of schedule or schedules"},
			{"TZ= in one", "", []string{"0 9 * * *", "TZ=UTC 0 12 * * *"}, "not TZ= or CRON_TZ= in schedules"},
			{"four fields", "", []string{"0 9 * *"}, "each of schedules is five fields"},
			{"@every in whole minutes", "", []string{"0 9 * * *", "@every 15m", "@every 1h30m"}, ""},
			{"@every 1s in one", "", []string{"0 9 * * *", "@every 1s"}, "each @every in schedules needs a whole number of minutes, at least 1m"},
			{"@every 90s in one", "", []string{"@every 90s", "@hourly"}, "each @every in schedules needs a whole number of minutes, at least 1m"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sj := newScheduledJob("", "", tc.schedule, nil)
				sj.Spec.Schedules = tc.schedules
				err := e.create(sj)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want)
			})
		}
	})
	t.Run("ScheduledJob jitter", func(t *testing.T) {
		for _, tc := range []struct{ jitter, want string }{
			{"5m", ""}, {"59m59s", ""}, {"1h", ""}, {"0s", ""},
			{"2h", "jitter must be a duration between 0s and 1h"},
		} {
			t.Run(tc.jitter, func(t *testing.T) {
				sj := newScheduledJob("", "", "0 * * * *", nil)
				sj.Spec.Jitter = &metav1.Duration{}
				if err := sj.Spec.Jitter.UnmarshalJSON([]byte(strconv.Quote(tc.jitter))); err != nil {
					t.Fatal(err)
				}
				err := e.create(sj)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want)
			})
		}
	})
	t.Run("ScheduledJob stopStrategy", func(t *testing.T) {
		for _, tc := range []struct {
			name                      string
			failures, successes, runs *int32
			want                      string
		}{
			{"after 3 failures", ptr.To[int32](3), nil, nil, ""},
			{"after 1 success", nil, ptr.To[int32](1), nil, ""},
			{"both, up to the default run history", ptr.To[int32](10), ptr.To[int32](10), nil, ""},
			{"up to a longer run history", ptr.To[int32](50), nil, ptr.To[int32](50), ""},
			{"neither", nil, nil, nil, "stopStrategy needs afterFailures or afterSuccesses"},
			{"zero failures", ptr.To[int32](0), nil, nil, "spec.stopStrategy.afterFailures: Invalid value: 0: spec.stopStrategy.afterFailures in body should be greater than or equal to 1"},
			{"negative successes", nil, ptr.To[int32](-1), nil, "spec.stopStrategy.afterSuccesses in body should be greater than or equal to 1"},
			{"over 50", ptr.To[int32](51), nil, ptr.To[int32](50), "spec.stopStrategy.afterFailures in body should be less than or equal to 50"},
			{"more failures than the default run history keeps", ptr.To[int32](11), nil, nil, "must be at most runHistoryLimit (default 10)"},
			{"more successes than the run history keeps", nil, ptr.To[int32](4), ptr.To[int32](3), "must be at most runHistoryLimit (default 10)"},
			{"no run history at all", ptr.To[int32](1), nil, ptr.To[int32](0), "must be at most runHistoryLimit"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sj := newScheduledJob("", "", "0 * * * *", nil)
				sj.Spec.StopStrategy = &v1alpha1.StopStrategy{AfterFailures: tc.failures, AfterSuccesses: tc.successes}
				sj.Spec.RunHistoryLimit = tc.runs
				err := e.create(sj)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want)
			})
		}
	})
	t.Run("jobTemplate metadata never carries keys of ours", func(t *testing.T) {
		for _, tc := range []struct {
			name        string
			labels, ann map[string]string
			want        string
		}{
			{"the tenant's own keys", map[string]string{"team": "a", "app.kubernetes.io/name": "x"}, map[string]string{"note": "x"}, ""},
			{"our created-by label", map[string]string{"ops.platform-operators.io/created-by": "at"}, nil, "jobTemplate.metadata may not set ops.platform-operators.io/*"},
			{"a run-now token", nil, map[string]string{"ops.platform-operators.io/run-now-token": "t1"}, "jobTemplate.metadata may not set ops.platform-operators.io/*"},
			{"a key of ours not named yet", nil, map[string]string{"ops.platform-operators.io/anything": "x"}, "jobTemplate.metadata may not set ops.platform-operators.io/*"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tmpl := batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.ann},
					Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
				sj := newScheduledJob("", "", "0 * * * *", nil)
				sj.Spec.JobTemplate = tmpl
				raw, err := json.Marshal(tmpl)
				if err != nil {
					t.Fatal(err)
				}
				var tmplMap map[string]any
				if err := json.Unmarshal(raw, &tmplMap); err != nil {
					t.Fatal(err)
				}
				at := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": v1alpha1.GroupVersion.String(), "kind": "At",
					"spec": map[string]any{"schedule": "2026-03-29T02:30:00Z", "jobTemplate": tmplMap}}}
				for kind, err := range map[string]error{"ScheduledJob": e.create(sj), "At": e.create(at)} {
					if tc.want == "" {
						if err != nil {
							t.Fatalf("%s refused: %v", kind, err)
						}
						continue
					}
					checkRefusal(t, err, "spec.jobTemplate", tc.want)
				}
			})
		}
	})
	t.Run("At localTime and timeZone", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			spec map[string]any
			want string
		}{
			{"local time in a zone", map[string]any{"localTime": "2026-03-29T02:30:00", "timeZone": "Europe/Berlin"}, ""},
			{"local time without a zone", map[string]any{"localTime": "2026-03-29T02:30:00"}, "localTime needs timeZone"},
			{"a zone with schedule", map[string]any{"schedule": "2026-03-29T02:30:00Z", "timeZone": "Europe/Berlin"}, "timeZone applies only to localTime"},
			{"both times", map[string]any{"schedule": "2026-03-29T02:30:00Z", "localTime": "2026-03-29T02:30:00", "timeZone": "UTC"}, "exactly one of schedule"},
			{"neither time", map[string]any{}, "exactly one of schedule"},
			{"an offset in localTime", map[string]any{"localTime": "2026-03-29T02:30:00+02:00", "timeZone": "Europe/Berlin"}, "spec.localTime"},
			{"Local as the zone", map[string]any{"localTime": "2026-03-29T02:30:00", "timeZone": "Local"}, "not Local"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				spec := map[string]any{"command": "true"}
				for k, v := range tc.spec {
					spec[k] = v
				}
				err := e.create(&unstructured.Unstructured{Object: map[string]any{
					"apiVersion": v1alpha1.GroupVersion.String(), "kind": "At", "spec": spec}})
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want)
			})
		}
	})
	t.Run("At schedule", func(t *testing.T) {
		for _, tc := range atScheduleCases {
			t.Run(fmt.Sprintf("%q", tc.schedule), func(t *testing.T) {
				at := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": v1alpha1.GroupVersion.String(), "kind": "At",
					"spec": map[string]any{"schedule": tc.schedule, "command": "true"},
				}}
				err := e.create(at)
				var decoded metav1.Time
				decodeErr := json.Unmarshal([]byte(strconv.Quote(tc.schedule)), &decoded)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if decodeErr != nil {
						t.Fatalf("accepted, but the controller cannot decode it: %v", decodeErr)
					}
					return
				}
				checkRefusal(t, err, "spec.schedule", tc.want)
			})
		}
	})

	t.Run("ScheduledJob timeZone", func(t *testing.T) {
		for _, tc := range []struct{ tz, want string }{
			{"UTC", ""},
			{"Europe/Berlin", ""},
			{"America/Argentina/Buenos_Aires", ""},
			{"America/Port-au-Prince", ""},
			{"Etc/GMT+5", ""},
			{"Etc/GMT-14", ""},
			{"EST5EDT", ""},
			{"Mars/Olympus", ""}, // the right shape: existence is the controller's to report
			{"Local", "not Local"},
			{"local", "not Local"},
			{"Europe/Berlin ", "IANA time zone name"},
			{"/etc/localtime", "IANA time zone name"},
			{"Europe/", "IANA time zone name"},
			{"Europe//Berlin", "IANA time zone name"},
			{"../../etc/passwd", "IANA time zone name"},
			{"UTC+2", ""}, // a valid shape (an unknown zone, reported by the controller)
			{"", "spec.timeZone"},
			{strings.Repeat("A", 65), "spec.timeZone"},
		} {
			t.Run(fmt.Sprintf("%q", tc.tz), func(t *testing.T) {
				err := e.create(newScheduledJob("", "", "0 9 * * *", ptr.To(tc.tz)))
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, "spec.timeZone", tc.want)
			})
		}
	})
	t.Run("SecretSync copy metadata", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			target v1alpha1.SecretSyncTarget
			want   string
		}{
			{"accepted", v1alpha1.SecretSyncTarget{Labels: map[string]string{"argocd.argoproj.io/instance": "x"}, Annotations: map[string]string{"reloader.stakater.com/match": "true"},
				SourceLabels: []string{"app.kubernetes.io/*", "team", "*"}, SourceAnnotations: []string{"*"}}, ""},
			{"our label", v1alpha1.SecretSyncTarget{Labels: map[string]string{"ops.platform-operators.io/secretsync": "x"}}, "target.labels may not set"},
			{"managed-by", v1alpha1.SecretSyncTarget{Labels: map[string]string{"app.kubernetes.io/managed-by": "x"}}, "target.labels may not set"},
			{"last-applied", v1alpha1.SecretSyncTarget{Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}}, "target.annotations may not set"},
			{"bad pattern", v1alpha1.SecretSyncTarget{SourceLabels: []string{"a*b"}}, "spec.target.sourceLabels"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e.n++
				ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ss-%d", e.n)}, Spec: v1alpha1.SecretSyncSpec{
					Source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "creds"}, Target: tc.target}}
				err := e.c.Create(e.ctx, ss, client.DryRunAll)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want)
			})
		}
	})
	t.Run("SecretSync keys", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			keys v1alpha1.SecretSyncKeys
			want string
		}{
			{"accepted", v1alpha1.SecretSyncKeys{Include: []string{"ca.crt", ".dockerconfigjson"}, Exclude: []string{"tls.key"}, Rename: []v1alpha1.KeyRename{{From: "ca.crt", To: "ca-bundle.crt"}}}, ""},
			{"two keys renamed to one", v1alpha1.SecretSyncKeys{Rename: []v1alpha1.KeyRename{{From: "a", To: "x"}, {From: "b", To: "x"}}}, "keys.rename: two keys renamed to the same name"},
			{"a key with a slash", v1alpha1.SecretSyncKeys{Include: []string{"a/b"}}, "spec.keys.include"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e.n++
				keys := tc.keys
				ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ss-%d", e.n)}, Spec: v1alpha1.SecretSyncSpec{
					Source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "creds"}, Keys: &keys}}
				err := e.c.Create(e.ctx, ss, client.DryRunAll)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want)
			})
		}
	})
	t.Run("SecretSync renamed copies", func(t *testing.T) {
		for _, tc := range []struct {
			source v1alpha1.SecretSyncSource
			name   string
			want   string
		}{
			{source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "harbor-pull"}, name: "regcred"},
			{source: v1alpha1.SecretSyncSource{Namespace: "src", Selector: &metav1.LabelSelector{}}, name: "regcred", want: "target.name renames the copy of one named Secret"},
			{source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "harbor-pull"}, name: "Reg_Cred", want: "spec.target.name"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e.n++
				ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ss-%d", e.n)}, Spec: v1alpha1.SecretSyncSpec{
					Source: tc.source, Target: v1alpha1.SecretSyncTarget{Name: tc.name}}}
				err := e.c.Create(e.ctx, ss, client.DryRunAll)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want)
			})
		}
	})
	t.Run("SecretSync source namespaces", func(t *testing.T) {
		for _, tc := range []struct {
			namespace string
			want      string // "" accepted, else a part of the refusal
		}{
			{namespace: "platform"},
			{namespace: "kubeflow"}, // not kube-*: an ordinary namespace
			{namespace: "kube-system", want: "source.namespace may not be a kube-* namespace"},
			{namespace: "kube-public", want: "source.namespace may not be a kube-* namespace"},
			{namespace: "kube-node-lease", want: "source.namespace may not be a kube-* namespace"},
		} {
			t.Run(tc.namespace, func(t *testing.T) {
				e.n++
				ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ss-%d", e.n)}, Spec: v1alpha1.SecretSyncSpec{
					Source: v1alpha1.SecretSyncSource{Namespace: tc.namespace, Selector: &metav1.LabelSelector{}}}}
				err := e.c.Create(e.ctx, ss, client.DryRunAll)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, "spec.source.namespace", tc.want)
			})
		}
	})
	t.Run("SecretSync namespace patterns", func(t *testing.T) {
		for _, tc := range []struct {
			include, exclude []string
			want             string // "" accepted, else the field named in the refusal
		}{
			{include: []string{"team-*", "a?c", "exact"}, exclude: []string{"kube-*", "*-system"}},
			{exclude: []string{"Team-*"}, want: "spec.target.excludeNamespaces"},
			{exclude: []string{"team-[ab]"}, want: "spec.target.excludeNamespaces"},
			{include: []string{"team/*"}, want: "spec.target.includeNamespaces"},
			{include: []string{""}, want: "spec.target.includeNamespaces"},
		} {
			t.Run(fmt.Sprintf("%q/%q", tc.include, tc.exclude), func(t *testing.T) {
				e.n++
				ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ss-%d", e.n)}, Spec: v1alpha1.SecretSyncSpec{
					Source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "creds"},
					Target: v1alpha1.SecretSyncTarget{IncludeNamespaces: tc.include, ExcludeNamespaces: tc.exclude}}}
				err := e.c.Create(e.ctx, ss, client.DryRunAll)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want, "globs of lower-case letters")
			})
		}
	})
	t.Run("SecretSync imagePullSecretFor", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			sas  []string
			want string
		}{
			{"names", []string{"default", "builder.ci"}, ""},
			{"a star alone: every ServiceAccount", []string{v1alpha1.AllServiceAccounts}, ""},
			{"a star beside a name", []string{"default", v1alpha1.AllServiceAccounts}, `imagePullSecretFor: "*" already means every ServiceAccount; list it alone`},
			{"a glob", []string{"builder-*"}, "spec.imagePullSecretFor[0]"},
			{"an upper-case name", []string{"Default"}, "spec.imagePullSecretFor[0]"},
			{"17 names", func() []string {
				var out []string
				for i := range 17 {
					out = append(out, fmt.Sprintf("sa-%d", i))
				}
				return out
			}(), "must have at most 16 items"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e.n++
				err := e.c.Create(e.ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ss-%d", e.n)}, Spec: v1alpha1.SecretSyncSpec{
					Source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "creds"}, ImagePullSecretFor: tc.sas}}, client.DryRunAll)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want)
			})
		}
	})
	t.Run("SecretSync of ConfigMaps", func(t *testing.T) {
		cm := v1alpha1.SecretSyncSource{Kind: v1alpha1.CopyKindConfigMap, Namespace: "src", Name: "ca-bundle"}
		for _, tc := range []struct {
			name string
			spec v1alpha1.SecretSyncSpec
			want string
		}{
			{"a ConfigMap source", v1alpha1.SecretSyncSpec{Source: cm}, ""},
			{"a ConfigMap source with keys and a renamed copy", v1alpha1.SecretSyncSpec{Source: cm, Target: v1alpha1.SecretSyncTarget{Name: "trust"},
				Keys: &v1alpha1.SecretSyncKeys{Include: []string{"ca.crt"}}}, ""},
			{"a type on a ConfigMap source", v1alpha1.SecretSyncSpec{Source: func() v1alpha1.SecretSyncSource { s := cm; s.Type = "Opaque"; return s }()},
				"source.type selects Secrets by type: a ConfigMap has none"},
			{"imagePullSecretFor with ConfigMaps", v1alpha1.SecretSyncSpec{Source: cm, ImagePullSecretFor: []string{"default"}},
				"imagePullSecretFor needs Secret copies"},
			{"an unknown kind", v1alpha1.SecretSyncSpec{Source: func() v1alpha1.SecretSyncSource { s := cm; s.Kind = "Pod"; return s }()},
				`supported values: "Secret", "ConfigMap"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e.n++
				err := e.c.Create(e.ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ss-%d", e.n)}, Spec: tc.spec}, client.DryRunAll)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want)
			})
		}
		t.Run("source.kind cannot change", func(t *testing.T) {
			ss := &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "kind-change"}, Spec: v1alpha1.SecretSyncSpec{
				Source: v1alpha1.SecretSyncSource{Namespace: "src", Name: "creds"}}}
			if err := e.c.Create(e.ctx, ss); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.c.Delete(e.ctx, ss) })
			if ss.Spec.Source.Kind != v1alpha1.CopyKindSecret {
				t.Errorf("source.kind defaulted to %q, want Secret", ss.Spec.Source.Kind)
			}
			ss.Spec.Source.Kind = v1alpha1.CopyKindConfigMap
			checkRefusal(t, e.c.Update(e.ctx, ss), "source.kind cannot change")
		})
	})
	t.Run("CopyRequest", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			spec v1alpha1.CopyRequestSpec
			want string
		}{
			{"a Secret", v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Namespace: "platform", Name: "harbor-pull"}, Name: "regcred"}, ""},
			{"a ConfigMap", v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Kind: v1alpha1.CopyKindConfigMap, Namespace: "platform", Name: "ca-bundle"}}, ""},
			{"no source name", v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Namespace: "platform"}}, "spec.source.name"},
			{"no source namespace", v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Name: "x"}}, "spec.source.namespace"},
			{"a bad copy name", v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Namespace: "platform", Name: "x"}, Name: "Reg_Cred"}, "spec.name"},
			{"an unknown kind", v1alpha1.CopyRequestSpec{Source: v1alpha1.CopyRequestSource{Kind: "Pod", Namespace: "platform", Name: "x"}}, `supported values: "Secret", "ConfigMap"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e.n++
				err := e.c.Create(e.ctx, &v1alpha1.CopyRequest{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cr-%d", e.n), Namespace: "default"}, Spec: tc.spec}, client.DryRunAll)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				checkRefusal(t, err, tc.want)
			})
		}
	})
}

// atScheduleCases are At spec.schedule strings: "" for accepted, else a fragment of the refusal.
var atScheduleCases = []struct{ schedule, want string }{
	{"2026-05-01T09:30:00Z", ""},
	{"2026-05-01T09:30:00+02:00", ""},
	{"2026-05-01T09:30:00-07:30", ""},
	{"2026-05-01T09:30:00.123456789+02:00", ""},
	{"2028-02-29T00:00:00Z", ""},
	{"2000-01-01T00:00:00Z", ""}, // in the past: runs at once
	{"2026-05-01t09:30:00z", "should match"},
	{"2026-05-01T09:30:00z", "should match"},
	{"2026-05-01t09:30:00Z", "should match"},
	{"2026-05-01T09:30:00", "date-time"},
	{"2026-05-01 09:30:00Z", "date-time"},
	{"2026-05-01T09:30Z", "date-time"},
	{"2026-05-01T9:30:00Z", "date-time"},
	{"2026-05-01T09:30:00+0200", "date-time"},
	{"2026-05-01T25:00:00Z", "date-time"},
	{"2026-05-01T09:30:60Z", "date-time"},
	{"2026-02-30T09:30:00Z", "date-time"},
	{"2027-02-29T00:00:00Z", "date-time"},
	{"2026-05-01", "date-time"},
	{"tomorrow", "date-time"},
	{"1714555800", "date-time"},
}

// TestSchedulesInStep keeps the two lines of defence in step on the table: what admission
// accepts, the controller's parser accepts (or reports as never firing); what admission refuses,
// the parser refuses.
func TestSchedulesInStep(t *testing.T) {
	from := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range scheduleCases {
		_, err := schedule.Parse(tc.schedule, "", from)
		switch {
		case tc.want == "" && tc.neverFires:
			if !errors.Is(err, schedule.ErrNeverFires) {
				t.Errorf("%q: admission accepts it as a schedule that never fires, the parser says %v", tc.schedule, err)
			}
		case tc.want == "" && err != nil:
			t.Errorf("%q: admission accepts it, the parser refuses it: %v", tc.schedule, err)
		case tc.want != "" && err == nil:
			t.Errorf("%q: admission refuses it (%s), the parser accepts it", tc.schedule, tc.want)
		}
	}
}

// TestScheduleTableInProcess runs the table through the CRD's rules in process: the same verdicts
// and messages as the apiserver, so the generated test below judges with the real rules.
func TestScheduleTableInProcess(t *testing.T) {
	validate := scheduleValidator(t)
	for _, tc := range scheduleCases {
		errs := validate(tc.schedule)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%q: refused: %v", tc.schedule, errs)
		case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
			t.Errorf("%q: errors %v, want one containing %q", tc.schedule, errs, tc.want)
		}
	}
}

// TestGeneratedSchedulesInStep compares admission (the CRD's CEL rules, in process) with the
// controller's parser on many schedules built from the pieces users (and typos) write: a
// schedule admission accepts must parse (or only never fire), and one the parser refuses as
// unparseable must be refused at admission.
func TestGeneratedSchedulesInStep(t *testing.T) {
	validate := scheduleValidator(t)
	from := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	values := []string{"0", "1", "5", "6", "7", "9", "12", "13", "23", "24", "30", "31", "32", "59", "60", "61",
		"00", "007", "+5", "-1", "99999999999999999999", "jan", "JAN", "Dec", "sun", "SAT", "Mon", "foo", "L", "W", "", "1.5"}
	steps := []string{"", "/0", "/1", "/2", "/5", "/61", "/+3", "/000", "/-1", "/", "/9223372036854775807", "/9223372036854775808", "/1/2"}
	spaces := []string{" ", "  ", "\t", "\u00a0", "\v", "\u2003"}
	descriptors := []string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@Daily", "@reboot", "@",
		"@every 1h", "@every 1h30m", "@every 90s", "@every 1.5h", "@every .5h", "@every 0", "@every -1h", "@every +2m", "@every 1", "@every 1d",
		"@every 1hm", "@every  1h", "@every\t1h", "@every 5µs", "@every 1.h", "@every .h", "@every 1h 2m", "@every 1ms1us"}
	rng := rand.New(rand.NewPCG(11, 2026))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	item := func() string {
		switch rng.IntN(5) {
		case 0:
			return pick([]string{"*", "?", "*-5", "?-x"}) + pick(steps)
		case 1:
			return pick(values) + "-" + pick(values) + pick(steps)
		case 2:
			return pick(values) + pick(steps)
		case 3:
			return pick([]string{"*5", "5-", "-", "1-2-3", ",", "#", "*/", "5L"})
		default:
			return pick(values)
		}
	}
	fieldOf := func() string {
		f := item()
		for rng.IntN(3) == 0 {
			f += "," + item()
		}
		return f
	}
	const n = 20000
	var accepted, refused int
	for range n {
		var spec string
		switch rng.IntN(10) {
		case 0:
			spec = pick(descriptors)
		case 1:
			spec = pick([]string{"TZ=UTC ", "CRON_TZ=Europe/Berlin ", " "}) + "0 9 * * *"
		default:
			count := 5
			if rng.IntN(8) == 0 {
				count = 3 + rng.IntN(5)
			}
			fields := make([]string, count)
			for i := range fields {
				fields[i] = "*"
				if rng.IntN(2) == 0 {
					fields[i] = fieldOf()
				}
			}
			spec = strings.Join(fields, pick(spaces))
		}
		if len(spec) > 128 || spec == "" {
			continue
		}
		errs := validate(spec)
		_, err := schedule.Parse(spec, "", from)
		switch {
		case len(errs) == 0 && err != nil && !errors.Is(err, schedule.ErrNeverFires):
			t.Errorf("%q: admission accepts it, the parser refuses it: %v", spec, err)
		case len(errs) > 0 && err == nil:
			t.Errorf("%q: admission refuses it (%v), the parser accepts it", spec, errs)
		}
		if len(errs) == 0 {
			accepted++
		} else {
			refused++
		}
	}
	// A generator that only produced one kind would prove nothing.
	if accepted < n/10 || refused < n/10 {
		t.Fatalf("accepted %d, refused %d of %d: the generator is unbalanced", accepted, refused, n)
	}
	t.Logf("accepted %d, refused %d", accepted, refused)
}
