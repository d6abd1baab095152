package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/release"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

// The table in docs/reliability.md sits between these markers; a rerun replaces it.
const (
	beginMarker = "<!-- chaos:begin (written by `make chaos`) -->"
	endMarker   = "<!-- chaos:end -->"
)

func upgradeInstall(h *harness, vals map[string]any) (*release.Release, error) {
	return testbed.UpgradeInstall(h.release(vals), nil)
}

// waitManagersReady waits until two manager pods, not being deleted, are Ready.
func (h *harness) waitManagersReady(ctx context.Context) error {
	_, ok := h.rec.waitFor(ctx, 3*time.Minute, func() bool {
		n := 0
		for _, p := range h.rec.pods {
			if p.ready && !p.deleted {
				n++
			}
		}
		return n >= 2
	})
	if !ok {
		return fmt.Errorf("two ready manager pods did not come back within 3m")
	}
	return nil
}

// waitLeader waits until a live manager pod holds the Lease (after a rollout the holder may still
// name a deleted pod, or nobody).
func (h *harness) waitLeader(ctx context.Context) error {
	_, ok := h.rec.waitFor(ctx, 2*time.Minute, func() bool {
		if len(h.rec.holders) == 0 {
			return false
		}
		last := h.rec.holders[len(h.rec.holders)-1].holder
		for name, p := range h.rec.pods {
			if !p.deleted && strings.HasPrefix(last, name+"_") {
				return true
			}
		}
		return false
	})
	if !ok {
		return fmt.Errorf("no live manager pod took the Lease within 2m")
	}
	_, _, err := h.leader(ctx)
	return err
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// renderTable is the Markdown table of the results.
func renderTable(results []result) string {
	var b strings.Builder
	b.WriteString("| scenario | load | faults | checked | result | time to converge | figures |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		verdict := r.verdict()
		if r.Error != "" {
			verdict += ": " + r.Error
		}
		for _, v := range r.Violations {
			verdict += "<br>" + v.String()
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", r.Name, cell(r.Load), cell(r.Faults), cell(r.Checked),
			cell(verdict), r.convergeText(), cell(strings.Join(r.Figures, "; ")))
	}
	return b.String()
}

// writeDocs replaces the table between the markers in path (appending a section when missing).
func writeDocs(path string, results []result, setup, total time.Duration, commit string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("%s\nRun of %s UTC, commit `%s`, `make chaos` (set-up %s: cluster, images, chart, load; whole run %s):\n\n%s%s",
		beginMarker, time.Now().UTC().Format("2006-01-02 15:04"), commit, setup.Round(time.Second), total.Round(time.Second),
		renderTable(results), endMarker)
	s := string(b)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i >= 0 && j > i {
		s = s[:i] + body + s[j+len(endMarker):]
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n## Fault harness (`make chaos`)\n\n" + body + "\n"
	}
	return os.WriteFile(path, []byte(s), 0o644)
}
