package main

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, o options)
	}{
		{name: "no flags give the documented defaults", check: func(t *testing.T, o options) {
			if o.metricsAddr != ":8080" || o.probeAddr != ":8081" || !o.leaderElect || o.controllers != "*" || o.qps != 1000 || o.burst != 2000 || o.logFormat != "json" || o.pprofAddr != "0" || o.apiServerWaitTimeout != 2*time.Minute {
				t.Errorf("defaults = %+v", o)
			}
		}},
		{name: "the chart's flags are all accepted", args: []string{
			"--metrics-bind-address=:9090", "--health-probe-bind-address=:9091", "--leader-elect=false",
			"--leader-election-id=x", "--leader-election-namespace=ns", "--controllers=*,podwatcher",
			"--podwatcher-namespaces=a,b", "--log-format=text", "--log-level=2", "--kube-api-qps=20.5", "--kube-api-burst=30",
			"--api-server-wait-timeout=120s",
		}, check: func(t *testing.T, o options) {
			if o.metricsAddr != ":9090" || o.leaderElect || o.leaderNS != "ns" || o.qps != 20.5 || o.burst != 30 || o.podWatcherNamespaces != "a,b" || o.apiServerWaitTimeout != 2*time.Minute {
				t.Errorf("parsed = %+v", o)
			}
		}},
		{name: "metrics are served over HTTPS with authentication by default, and leader election has controller-runtime's timings", check: func(t *testing.T, o options) {
			if !o.metricsSecure || o.metricsCertDir != "" {
				t.Errorf("metricsSecure = %t, metricsCertDir = %q; want true and empty (a self-signed certificate)", o.metricsSecure, o.metricsCertDir)
			}
			if o.leaseDuration != 90*time.Second || o.renewDeadline != 70*time.Second || o.retryPeriod != 2*time.Second {
				t.Errorf("leader election = %s/%s/%s, want 90s/70s/2s", o.leaseDuration, o.renewDeadline, o.retryPeriod)
			}
		}},
		{name: "HTTPS metrics negotiate HTTP/1.1 only unless HTTP/2 is asked for", check: func(t *testing.T, o options) {
			nextProtos := func(o options) []string {
				c, err := metricsTLS(context.Background(), o.metricsCertDir, o.metricsEnableHTTP2, logr.Discard())
				if err != nil {
					t.Fatal(err)
				}
				return c.NextProtos
			}
			if got := nextProtos(o); !reflect.DeepEqual(got, []string{"http/1.1"}) {
				t.Errorf("NextProtos = %q by default, want [http/1.1]", got)
			}
			on, err := parseFlags([]string{"--metrics-enable-http2"})
			if err != nil {
				t.Fatal(err)
			}
			if got := nextProtos(on); !reflect.DeepEqual(got, []string{"h2", "http/1.1"}) {
				t.Errorf("NextProtos = %q with --metrics-enable-http2, want h2 offered", got)
			}
		}},
		{name: "leader election timings are accepted", args: []string{"--leader-elect-lease-duration=60s", "--leader-elect-renew-deadline=40s", "--leader-elect-retry-period=5s", "--metrics-cert-dir=/certs"},
			check: func(t *testing.T, o options) {
				if o.leaseDuration != time.Minute || o.renewDeadline != 40*time.Second || o.retryPeriod != 5*time.Second || o.metricsCertDir != "/certs" {
					t.Errorf("parsed = %+v", o)
				}
			}},
		{name: "a Job's pods count as not created after 2m by default, as set, or never with 0", check: func(t *testing.T, o options) {
			if o.jobPodsStuckAfter != 2*time.Minute {
				t.Errorf("jobPodsStuckAfter = %s, want 2m", o.jobPodsStuckAfter)
			}
			for arg, want := range map[string]time.Duration{"--job-pods-stuck-after=20s": 20 * time.Second, "--job-pods-stuck-after=0": 0} {
				if o, err := parseFlags([]string{arg}); err != nil || o.jobPodsStuckAfter != want {
					t.Errorf("%s: %s, %v; want %s", arg, o.jobPodsStuckAfter, err, want)
				}
			}
		}},
		{name: "a negative --job-pods-stuck-after is an error", args: []string{"--job-pods-stuck-after=-1s"}, wantErr: "--job-pods-stuck-after must not be negative"},
		{name: "a lease no longer than the renew deadline is an error", args: []string{"--leader-elect-lease-duration=70s"}, wantErr: "must be greater than --leader-elect-renew-deadline"},
		{name: "a renew deadline within 1.2 retry periods is an error", args: []string{"--leader-elect-retry-period=59s"}, wantErr: "1.2 x --leader-elect-retry-period"},
		{name: "a zero retry period is an error", args: []string{"--leader-elect-retry-period=0"}, wantErr: "must be positive"},
		{name: "the pull secret sync's ServiceAccounts are split", args: []string{"--pull-secret-sync-name=p", "--pull-secret-sync-secret=harbor", "--pull-secret-sync-service-accounts=default, builder"},
			check: func(t *testing.T, o options) {
				if !reflect.DeepEqual(o.pullSecretSync.ImagePullSecretFor, []string{"default", "builder"}) {
					t.Errorf("imagePullSecretFor = %q", o.pullSecretSync.ImagePullSecretFor)
				}
			}},
		{name: "a pull secret sync without its secret is an error", args: []string{"--pull-secret-sync-name=p"}, wantErr: "--pull-secret-sync-secret"},
		{name: "a pull secret sync named as the default SecretSync is an error", args: []string{"--default-secretsync-name=s", "--pull-secret-sync-name=s", "--pull-secret-sync-secret=harbor"},
			wantErr: "--pull-secret-sync-name must differ from --default-secretsync-name"},
		{name: "a zero API server wait means a single attempt", args: []string{"--api-server-wait-timeout=0"}, check: func(t *testing.T, o options) {
			if o.apiServerWaitTimeout != 0 {
				t.Errorf("apiServerWaitTimeout = %s, want 0", o.apiServerWaitTimeout)
			}
		}},
		{name: "a negative API server wait is an error", args: []string{"--api-server-wait-timeout=-1s"}, wantErr: "--api-server-wait-timeout must not be negative"},
		{name: "a zero QPS is an error", args: []string{"--kube-api-qps=0"}, wantErr: "--kube-api-qps must be positive, or -1 for no client-side limit"},
		{name: "a negative QPS other than -1 is an error", args: []string{"--kube-api-qps=-2"}, wantErr: "--kube-api-qps must be positive, or -1 for no client-side limit"},
		{name: "a negative burst is an error", args: []string{"--kube-api-burst=-1"}, wantErr: "--kube-api-burst must be positive"},
		{name: "a zero burst is an error even without a client-side limit", args: []string{"--kube-api-qps=-1", "--kube-api-burst=0"}, wantErr: "--kube-api-burst must be positive"},
		{name: "a client-side limit can be set", args: []string{"--kube-api-qps=50", "--kube-api-burst=100"}, check: func(t *testing.T, o options) {
			if o.qps != 50 || o.burst != 100 {
				t.Errorf("qps, burst = %v, %d, want 50, 100", o.qps, o.burst)
			}
		}},
		{name: "an unknown flag is an error", args: []string{"--controler=*"}, wantErr: "flag provided but not defined"},
		{name: "a stray argument is an error", args: []string{"--controllers=*", "podwatcher"}, wantErr: "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o)
		})
	}
}

func TestSplitList(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{" a , ,b ", []string{"a", "b"}},
	}
	for _, tc := range cases {
		if got := splitList(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("splitList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestANamespaceListThatNamesNoNamespaceIsRefused(t *testing.T) {
	cases := []struct {
		in, wantErr string
		want        []string
	}{
		{in: "", want: nil},
		{in: "a, b", want: []string{"a", "b"}},
		{in: ",", wantErr: `names no namespace`},
		{in: " , ", wantErr: `names no namespace`},
		{in: "team a", wantErr: `"team a", which is not a namespace name`},
		{in: "a,Team-B", wantErr: `"Team-B", which is not a namespace name`},
	}
	for _, tc := range cases {
		got, err := namespaceList("--watch-namespaces", tc.in)
		if tc.wantErr == "" && (err != nil || !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("namespaceList(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("namespaceList(%q) = %q, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
		}
	}
}
