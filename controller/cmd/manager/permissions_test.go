package main

import (
	"strings"
	"testing"
)

func TestCheckWatchNamespaces(t *testing.T) {
	cases := []struct {
		name                  string
		watch, enabled, podNS []string
		wantErr               string
	}{
		{name: "all namespaces allow every controller", enabled: []string{"secretsync", "at", "podwatcher"}, podNS: []string{"x"}},
		{name: "listed namespaces allow the namespaced controllers", watch: []string{"a", "b"}, enabled: []string{"at", "scheduledjob", "podwatcher"}, podNS: []string{"b"}},
		{name: "listed namespaces refuse SecretSync, which is cluster-scoped", watch: []string{"a"}, enabled: []string{"at", "secretsync"}, wantErr: "cluster-scoped"},
		{name: "a pod watcher namespace outside the list is refused", watch: []string{"a"}, enabled: []string{"podwatcher"}, podNS: []string{"c"}, wantErr: `"c"`},
		{name: "pod watcher namespaces do not matter when it is off", watch: []string{"a"}, enabled: []string{"at"}, podNS: []string{"c"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkWatchNamespaces(tc.watch, tc.enabled, tc.podNS)
			if tc.wantErr == "" && err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
