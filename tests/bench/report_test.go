package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// section returns the text between name's markers in text, and whether they are there.
func section(text, name string) (string, bool) {
	begin, end := "<!-- bench:"+name+":begin -->", "<!-- bench:"+name+":end -->"
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		return "", false
	}
	return text[i+len(begin) : j], true
}

func TestLoadReportReplacesOnlyThePartsRun(t *testing.T) {
	const before = "# Benchmarks\n\nintro\n\n" +
		"<!-- bench:load:begin -->\nold load\n<!-- bench:load:end -->\n\n" +
		"<!-- bench:load-mixed:begin -->\nold mixed\n<!-- bench:load-mixed:end -->\n\n" +
		"<!-- bench:load-fair:begin -->\nold fair\n<!-- bench:load-fair:end -->\n\n" +
		"### Narrative\nhand-written\n"
	sec := time.Second
	res := &loadResult{
		steps: []loadStep{{schedules: 3000, ours: tally{expected: 2, ran: 2, skews: []time.Duration{sec, 2 * sec}},
			floor: []time.Duration{sec, sec}, slotCPU: []string{"busy"}, floorCPU: "busy"}},
		mixed:          []loadMixed{{jobs: tally{expected: 1, ran: 1, skews: []time.Duration{sec}}, copies: []time.Duration{sec}}},
		mixedFloorJobs: []time.Duration{sec}, mixedFloorCopies: []time.Duration{sec},
		smallAlone: []time.Duration{10 * time.Millisecond}, smallBeside: []time.Duration{20 * time.Millisecond},
		big:            tally{expected: 1, ran: 1, skews: []time.Duration{sec}},
		smallSyncAlone: sec, smallSyncBeside: sec, hugeSync: 10 * sec,
	}
	// What a part's fresh section starts with.
	fresh := map[string]string{
		"load":       "## ScheduledJob at scale, both kinds at once, fairness",
		"load-mixed": "### Schedules and a fan-out at the same minute",
		"load-fair":  "### Fairness",
	}
	old := map[string]string{"load": "\nold load\n", "load-mixed": "\nold mixed\n", "load-fair": "\nold fair\n"}
	for _, tc := range []struct {
		parts    []string
		replaced []string // sections rewritten; the others keep their text
	}{
		{[]string{"fair"}, []string{"load-fair"}},
		{[]string{"mixed"}, []string{"load-mixed"}},
		{[]string{"schedules"}, []string{"load"}},
		{[]string{"schedules", "fair"}, []string{"load", "load-fair"}},
		{[]string{"schedules", "mixed", "fair"}, []string{"load", "load-mixed", "load-fair"}},
	} {
		t.Run(strings.Join(tc.parts, ","), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "benchmarks.md")
			if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
			o := loadOptions{parts: tc.parts, minutes: 2, workers: 32, mixedSchedules: 1, mixedNamespaces: 1, bigTenant: 1, hugeBytes: 1 << 20, fairNamespaces: 1}
			cmd := "go -C tests run ./bench -load-parts=" + strings.Join(tc.parts, ",")
			if err := writeLoadReport(path, filepath.Join(dir, "img"), res, o, cmd); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			after := string(b)
			for _, name := range []string{"load", "load-mixed", "load-fair"} {
				got, ok := section(after, name)
				if !ok {
					t.Fatalf("section %s lost:\n%s", name, after)
				}
				rewritten := got != old[name]
				want := false
				for _, r := range tc.replaced {
					want = want || r == name
				}
				switch {
				case rewritten != want:
					t.Errorf("section %s rewritten: %v, want %v; it holds:\n%s", name, rewritten, want, got)
				case want && !strings.HasPrefix(got, "\n"+fresh[name]):
					t.Errorf("section %s does not start with %q:\n%s", name, fresh[name], got)
				case want && !strings.Contains(got, "Command: `"+cmd+"`"):
					t.Errorf("section %s does not say its command:\n%s", name, got)
				}
			}
			if !strings.HasPrefix(after, "# Benchmarks\n\nintro\n\n") || !strings.HasSuffix(after, "### Narrative\nhand-written\n") {
				t.Errorf("text outside the sections changed:\n%s", after)
			}
			if strings.Count(after, "<!-- bench:") != 6 {
				t.Errorf("want the three sections' markers only once each:\n%s", after)
			}
		})
	}
}
