package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSafeText(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text is kept", "synced 4/4 copies", "synced 4/4 copies"},
		{"a newline cannot start a row", "ok\nWarning\tForged", `ok\nWarning\tForged`},
		{"an escape sequence is shown, not run", "\x1b[2J\x1b]52;c;eA==\x07", `\x1b[2J\x1b]52;c;eA==\x07`},
		{"a C1 control is escaped", "a\u009b31m", `a\x9b31m`},
		{"a bidirectional override is escaped", "abc\u202edef", `abc\u202edef`},
		{"invalid UTF-8 is escaped byte by byte", "a\xffb", `a\xffb`},
		{"other scripts are kept", "Grüße, 東京", "Grüße, 東京"},
		{"a long field is cut and says so", strings.Repeat("x", 20), "xxxxxxxxxx... (10 more bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := maxFieldBytes
			if strings.HasPrefix(tc.name, "a long") {
				limit = 10
			}
			if got := safeText(tc.in, limit); got != tc.want {
				t.Errorf("safeText(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// Every string a report holds, however deep, is made safe; times are kept; the original is not
// changed.
func TestSafeCopyReachesEveryString(t *testing.T) {
	now := metav1.Now()
	rep := whyReport{SecretSync: "s\n", Message: "m\x1b", Ready: &metav1.Condition{Message: "r\x07", LastTransitionTime: now},
		Copies: []copyReport{{Name: "c\t", Message: "cm\u202e"}}, Notes: []string{"n\r"},
		Events: []eventLine{{Time: now, Reason: "e\x1b", Message: "em\n"}}}
	got := safeCopy(rep)
	for _, s := range []string{got.SecretSync, got.Message, got.Ready.Message, got.Copies[0].Name, got.Copies[0].Message, got.Notes[0], got.Events[0].Reason, got.Events[0].Message} {
		if strings.ContainsFunc(s, unsafeRune) {
			t.Errorf("%q kept a control character", s)
		}
	}
	if !got.Events[0].Time.Equal(&now) || !got.Ready.LastTransitionTime.Equal(&now) {
		t.Errorf("times changed: %v, %v", got.Events[0].Time, got.Ready.LastTransitionTime)
	}
	if rep.Ready.Message != "r\x07" || rep.Notes[0] != "n\r" {
		t.Errorf("the original changed")
	}
}

// Output reaches the terminal through printReport (every format, a safe copy) and warn: no
// command writes to c.out or stdout itself. This reads the source, so a new command is held to it.
func TestOnlyPrintReportWritesTheOutput(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "main.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"c.out", "c.errOut", "os.Stdout", "os.Stderr", "fmt.Print", "cmd.OutOrStdout", "cmd.Println", "cmd.Printf"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s uses %s: print through printReport (or c.warn), which makes cluster text safe", f, bad)
			}
		}
	}
}
