package main

import (
	"strings"
	"testing"
	"time"
)

const managerMetrics0 = `# HELP rest_client_requests_total Number of HTTP requests.
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 10
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 5
workqueue_queue_duration_seconds_sum{controller="scheduledjob",name="scheduledjob"} 1
workqueue_queue_duration_seconds_count{controller="scheduledjob",name="scheduledjob"} 10
workqueue_queue_duration_seconds_sum{controller="secretsync",name="secretsync"} 100
workqueue_queue_duration_seconds_count{controller="secretsync",name="secretsync"} 1
workqueue_work_duration_seconds_sum{controller="scheduledjob",name="scheduledjob"} 0
workqueue_work_duration_seconds_count{controller="scheduledjob",name="scheduledjob"} 0
platform_operators_scheduledjob_job_creation_skew_seconds_bucket{le="0.5"} 0
platform_operators_scheduledjob_job_creation_skew_seconds_bucket{le="1"} 0
platform_operators_scheduledjob_job_creation_skew_seconds_bucket{le="2"} 0
platform_operators_scheduledjob_job_creation_skew_seconds_bucket{le="+Inf"} 0
platform_operators_scheduledjob_job_creation_skew_seconds_sum 0
platform_operators_scheduledjob_job_creation_skew_seconds_count 0
`

const managerMetrics1 = `rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 1010
rest_client_requests_total{code="409",host="127.0.0.1:6443",method="POST"} 2
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 5
workqueue_queue_duration_seconds_sum{controller="scheduledjob",name="scheduledjob"} 501
workqueue_queue_duration_seconds_count{controller="scheduledjob",name="scheduledjob"} 1010
workqueue_queue_duration_seconds_sum{controller="secretsync",name="secretsync"} 900
workqueue_queue_duration_seconds_count{controller="secretsync",name="secretsync"} 2
workqueue_work_duration_seconds_sum{controller="scheduledjob",name="scheduledjob"} 20
workqueue_work_duration_seconds_count{controller="scheduledjob",name="scheduledjob"} 1000
platform_operators_scheduledjob_job_creation_skew_seconds_bucket{le="0.5"} 500
platform_operators_scheduledjob_job_creation_skew_seconds_bucket{le="1"} 980
platform_operators_scheduledjob_job_creation_skew_seconds_bucket{le="2"} 1000
platform_operators_scheduledjob_job_creation_skew_seconds_bucket{le="+Inf"} 1000
platform_operators_scheduledjob_job_creation_skew_seconds_sum 600
platform_operators_scheduledjob_job_creation_skew_seconds_count 1000
`

const apiserverMetrics0 = `apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="platform-operators",priority_level="platform-operators"} 2
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="platform-operators",priority_level="platform-operators"} 100
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="false",flow_schema="platform-operators",priority_level="platform-operators"} 50
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="false",flow_schema="platform-operators",priority_level="platform-operators"} 1
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="exempt",priority_level="exempt"} 7
`

const apiserverMetrics1 = `apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="platform-operators",priority_level="platform-operators"} 102
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="platform-operators",priority_level="platform-operators"} 1100
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="platform-operators-leader-election",priority_level="leader-election"} 0.5
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="platform-operators-leader-election",priority_level="leader-election"} 5
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="false",flow_schema="platform-operators",priority_level="platform-operators"} 80
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="false",flow_schema="platform-operators",priority_level="platform-operators"} 2
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="exempt",priority_level="exempt"} 7
apiserver_flowcontrol_rejected_requests_total{flow_schema="platform-operators",priority_level="platform-operators",reason="queue-full"} 3
`

func TestPromSumMatchesNameAndLabelsExactly(t *testing.T) {
	for _, tc := range []struct {
		name, metric string
		match        map[string]string
		want         float64
	}{
		{"every series of a name", "rest_client_requests_total", nil, 15},
		{"by a label", "rest_client_requests_total", map[string]string{"method": "PATCH"}, 5},
		{"a longer name with the prefix is another metric", "workqueue_queue_duration_seconds", nil, 0},
		{"one controller's queue", "workqueue_queue_duration_seconds_sum", map[string]string{"name": "secretsync"}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := promSum(managerMetrics0, tc.metric, tc.match); got != tc.want {
				t.Fatalf("promSum(%s, %v) = %v, want %v", tc.metric, tc.match, got, tc.want)
			}
		})
	}
}

func TestBucketP99IsTheBucketHoldingIt(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after map[string]float64
		want          time.Duration
	}{
		{"the 99th of 1000 in the 1 s bucket", nil, map[string]float64{"0.5": 500, "1": 990, "2": 1000, "+Inf": 1000}, time.Second},
		{"the differences count, not the totals", map[string]float64{"0.5": 100, "1": 100, "2": 100, "+Inf": 100}, map[string]float64{"0.5": 100, "1": 150, "2": 200, "+Inf": 200}, 2 * time.Second},
		{"past the last finite bucket", nil, map[string]float64{"1": 10, "+Inf": 100}, -1},
		{"no samples", nil, map[string]float64{"1": 0, "+Inf": 0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bucketP99(tc.before, tc.after); got != tc.want {
				t.Fatalf("bucketP99 = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDiagnoseTakesTheDifferencesOverTheWindow(t *testing.T) {
	d := diagnose(metricsSnapshot{managerMetrics0, apiserverMetrics0}, metricsSnapshot{managerMetrics1, apiserverMetrics1})
	if d.creates != 1000 || d.createMean != 600*time.Millisecond || d.createP99 != 2*time.Second {
		t.Errorf("creates %v mean %s p99 %s, want 1000, 600ms, 2s", d.creates, d.createMean, d.createP99)
	}
	if d.queueMean != 500*time.Millisecond || d.workMean != 20*time.Millisecond {
		t.Errorf("queue mean %s, work mean %s; want 500ms (the scheduledjob queue only), 20ms", d.queueMean, d.workMean)
	}
	if d.requests["POST"] != 1002 || d.requests["PATCH"] != 0 {
		t.Errorf("requests %v, want POST 1002 and no PATCH", d.requests)
	}
	if d.apfCount["platform-operators"] != 1000 || d.apfWait["platform-operators"] != 100*time.Millisecond {
		t.Errorf("APF platform-operators: %v requests, mean wait %s; want 1000, 100ms (executed requests only)", d.apfCount["platform-operators"], d.apfWait["platform-operators"])
	}
	if d.apfCount["leader-election"] != 5 || d.apfWait["leader-election"] != 100*time.Millisecond {
		t.Errorf("APF leader-election: %v, %s; want 5, 100ms (a level new since the first snapshot)", d.apfCount["leader-election"], d.apfWait["leader-election"])
	}
	if _, ok := d.apfCount["exempt"]; ok {
		t.Errorf("exempt had no requests in the window but is listed")
	}
	if d.apfRejected != 3 {
		t.Errorf("rejected %v, want 3", d.apfRejected)
	}
	if s := d.String(); !strings.Contains(s, "platform-operators 1000 req, mean wait 100 ms") {
		t.Errorf("String() = %q", s)
	}
}
