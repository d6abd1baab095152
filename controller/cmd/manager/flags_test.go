package main

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, o options)
	}{
		{name: "no flags give the documented defaults", check: func(t *testing.T, o options) {
			if o.metricsAddr != ":8080" || o.probeAddr != ":8081" || !o.leaderElect || o.controllers != "*" || o.qps != 500 || o.burst != 1000 || o.logFormat != "json" || o.pprofAddr != "0" || o.apiServerWaitTimeout != 2*time.Minute {
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
		{name: "the pull secret sync's ServiceAccounts are split", args: []string{"--pull-secret-sync-name=p", "--pull-secret-sync-secret=harbor", "--pull-secret-sync-service-accounts=default, builder"},
			check: func(t *testing.T, o options) {
				if !reflect.DeepEqual(o.pullSecretSync.ImagePullSecretFor, []string{"default", "builder"}) {
					t.Errorf("imagePullSecretFor = %q", o.pullSecretSync.ImagePullSecretFor)
				}
			}},
		{name: "a pull secret sync without its secret is an error", args: []string{"--pull-secret-sync-name=p"}, wantErr: "--pull-secret-sync-secret"},
		{name: "a zero API server wait means a single attempt", args: []string{"--api-server-wait-timeout=0"}, check: func(t *testing.T, o options) {
			if o.apiServerWaitTimeout != 0 {
				t.Errorf("apiServerWaitTimeout = %s, want 0", o.apiServerWaitTimeout)
			}
		}},
		{name: "a negative API server wait is an error", args: []string{"--api-server-wait-timeout=-1s"}, wantErr: "--api-server-wait-timeout must not be negative"},
		{name: "a zero QPS is an error", args: []string{"--kube-api-qps=0"}, wantErr: "must be positive"},
		{name: "a negative burst is an error", args: []string{"--kube-api-burst=-1"}, wantErr: "must be positive"},
		{name: "an unknown flag is an error", args: []string{"--controler=*"}, wantErr: "flag provided but not defined"},
		{name: "a stray argument is an error", args: []string{"podwatcher"}, wantErr: "unexpected arguments"},
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
