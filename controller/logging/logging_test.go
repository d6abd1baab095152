package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	cases := []struct {
		name      string
		format    string
		level     string
		wantErr   string
		wantV1    bool
		wantInfo  bool
		wantError bool
		checkJSON bool
	}{
		{name: "json at info writes info lines as JSON and hides V(1)", format: "json", level: "info", wantInfo: true, checkJSON: true},
		{name: "text at debug writes V(1) lines", format: "text", level: "debug", wantInfo: true, wantV1: true},
		{name: "a verbosity number shows lines up to it", format: "json", level: "2", wantInfo: true, wantV1: true, checkJSON: true},
		{name: "error level hides info lines", format: "json", level: "error", wantError: true},
		{name: "warn level hides info lines and shows errors", format: "json", level: "warn", wantError: true},
		{name: "an unknown format is an error", format: "xml", level: "info", wantErr: "--log-format must be json or text"},
		{name: "an unknown level is an error", format: "json", level: "loud", wantErr: "--log-level must be"},
		{name: "a negative verbosity is an error", format: "json", level: "-1", wantErr: "--log-level must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := New(&buf, tc.format, tc.level)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Info("info line", "key", "value")
			log.V(1).Info("debug line")
			log.Error(errors.New("boom"), "error line")
			out := buf.String()
			if got := strings.Contains(out, "error line"); got != (tc.wantError || tc.wantInfo) {
				t.Errorf("error line written = %v, want %v; output:\n%s", got, tc.wantError || tc.wantInfo, out)
			}
			if got := strings.Contains(out, "info line"); got != tc.wantInfo {
				t.Errorf("info line written = %v, want %v; output:\n%s", got, tc.wantInfo, out)
			}
			if got := strings.Contains(out, "debug line"); got != tc.wantV1 {
				t.Errorf("V(1) line written = %v, want %v; output:\n%s", got, tc.wantV1, out)
			}
			if tc.checkJSON && tc.wantInfo {
				first := strings.SplitN(strings.TrimSpace(out), "\n", 2)[0]
				var m map[string]any
				if err := json.Unmarshal([]byte(first), &m); err != nil {
					t.Fatalf("line is not JSON: %v: %s", err, first)
				}
				if m["key"] != "value" || m["msg"] != "info line" {
					t.Errorf("JSON line lacks key/msg: %v", m)
				}
			}
		})
	}
}
