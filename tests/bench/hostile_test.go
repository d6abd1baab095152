package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHostileReportSaysWhenTheLimitWasReached(t *testing.T) {
	tests := []struct {
		name    string
		rows    []hostileRow
		refused map[string]int
		want    []string
	}{
		{
			name: "a kill is a breach, and a row of a manager that is down says so",
			rows: []hostileRow{
				{what: "before", rssMiB: 60, peakMiB: 62, heapMiB: 20, liveMiB: 15},
				{what: "during", killed: 1, restarts: 1, note: "killed while the objects were created; restarted", rssMiB: 200, peakMiB: 255, heapMiB: 150, liveMiB: 140},
				{what: "with them in place", down: true, killed: 4, restarts: 3, note: "not ready after 3 restarts"},
			},
			want: []string{"| before | 60.0 MiB | 62.0 MiB | 20.0 MiB | 15.0 MiB | 0 / 0 |  |",
				"killed while the objects were created; restarted) | 200.0 MiB | 255.0 MiB | 150.0 MiB | 140.0 MiB | 1 / 1 | **limit reached** |",
				"| with them in place (not ready after 3 restarts) | down |  |  |  | 4 / 3 | **limit reached** |",
				"Result: **missed**"},
		},
		{
			name:    "objects refused at admission are said",
			rows:    []hostileRow{{what: "before", rssMiB: 60, peakMiB: 62}},
			refused: map[string]int{"Secrets": 200, "Jobs": 150},
			want:    []string{"The API server refused 0 ConfigMaps, 200 Secrets and 150 Jobs of them at admission", "- Secrets: \"denied\"\n- Jobs: \"denied\""},
		},
		{
			name: "RSS flat and far under the limit is met",
			rows: []hostileRow{{what: "before", rssMiB: 60, peakMiB: 62, liveMiB: -1}, {what: "during", rssMiB: 64, peakMiB: 70, liveMiB: -1}},
			want: []string{"| during | 64.0 MiB | 70.0 MiB | 0.0 MiB | n/a | 0 / 0 |  |", "Result: met"},
		},
		{
			name: "a peak at the limit is a breach even without a kill",
			rows: []hostileRow{{what: "during", rssMiB: 250, peakMiB: 255}},
			want: []string{"| during | 250.0 MiB | 255.0 MiB | 0.0 MiB | 0.0 MiB | 0 / 0 | **limit reached** |"},
		},
		{
			name: "RSS growing towards the limit without a kill is missed, and says how close",
			rows: []hostileRow{{what: "before", rssMiB: 52, peakMiB: 66}, {what: "during", rssMiB: 245, peakMiB: 240}},
			want: []string{"| during | 245.0 MiB | 240.0 MiB | 0.0 MiB | 0.0 MiB | 0 / 0 | **94% of the limit** |", "Result: **missed**: RSS grew by 193.0 MiB"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b.md")
			r := &hostileResult{limit: 256 << 20, rows: tt.rows, refused: tt.refused}
			r.refusals = map[string]string{}
			for k := range tt.refused {
				r.refusals[k] = "denied"
			}
			if err := writeHostileReport(path, r, hostileOptions{configMaps: 1, secrets: 1, jobs: 1, bytes: 800 << 10}, "make bench"); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			text, ok := section(string(b), "hostile")
			if !ok {
				t.Fatal("no hostile section")
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("report lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestHostileReportSaysTheSmallTenantsCopyLatency(t *testing.T) {
	lat := func(missed int, ds ...time.Duration) copyLatencies {
		return copyLatencies{copies: ds, floors: ds, missed: missed}
	}
	tests := []struct {
		name string
		rows []hostileRow
		want []string
	}{
		{
			name: "copies as fast beside the flood are met, and each row says its probes",
			rows: []hostileRow{
				{what: "before", rssMiB: 40, peakMiB: 40, copy: lat(0, 100*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond)},
				{what: "during", rssMiB: 42, peakMiB: 44, copy: lat(0, 400*time.Millisecond, 900*time.Millisecond)},
			},
			want: []string{"| 0 / 0 |  | 400 ms / 900 ms (2; floor 400 ms) |", "The small tenant's copies: met"},
		},
		{
			name: "a copy that never arrives is missed",
			rows: []hostileRow{
				{what: "before", rssMiB: 40, peakMiB: 40, copy: lat(0, 100*time.Millisecond)},
				{what: "during", rssMiB: 42, peakMiB: 44, copy: lat(2, 100*time.Millisecond)},
			},
			want: []string{"**2 missed**", "The small tenant's copies: **missed**: 2 copies did not arrive"},
		},
		{
			name: "a median more than a second and twice the first row's is missed",
			rows: []hostileRow{
				{what: "before", rssMiB: 40, peakMiB: 40, copy: lat(0, 100*time.Millisecond)},
				{what: "with them in place", rssMiB: 42, peakMiB: 44, copy: lat(0, 3*time.Second)},
			},
			want: []string{"The small tenant's copies: **missed**: median 3000 ms in \"with them in place\", allowed 1100 ms"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b.md")
			r := &hostileResult{limit: 256 << 20, rows: tt.rows}
			o := hostileOptions{configMaps: 1, secrets: 1, jobs: 1, bytes: 800 << 10, scheduledJobs: 1, ats: 1, jobTemplateBytes: 850 << 10,
				copyRequests: 1, copyRequestBytes: 240 << 10, serviceAccounts: 1, pullSecretEntries: 6000, copySamples: 5}
			if err := writeHostileReport(path, r, o, "make bench"); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			text, _ := section(string(b), "hostile")
			for _, w := range append(tt.want, "1 suspended ScheduledJobs and 1 Ats", "1 ServiceAccounts with 6000 `imagePullSecrets` entries") {
				if !strings.Contains(text, w) {
					t.Errorf("report lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestKindCountsNamesTheKindsAskedFor(t *testing.T) {
	o := hostileOptions{configMaps: 3, scheduledJobs: 2, serviceAccounts: 1}
	got := kindCounts(map[string]int{"ConfigMaps": 3, "ScheduledJobs": 2}, o)
	if want := "3 ConfigMaps, 0 Secrets, 0 Jobs, 2 ScheduledJobs and 0 ServiceAccounts"; got != want {
		t.Errorf("kindCounts = %q, want %q", got, want)
	}
}

func TestHostileObjectsAreAsLargeAsAsked(t *testing.T) {
	refs := hostilePullSecrets(6000)
	seen := map[string]bool{}
	for _, r := range refs {
		if len(r.Name) != hostilePullSecretNameBytes || seen[r.Name] {
			t.Fatalf("entry %q: want %d characters, each name once", r.Name, hostilePullSecretNameBytes)
		}
		seen[r.Name] = true
	}
	if len(refs) != 6000 {
		t.Errorf("%d entries, want 6000", len(refs))
	}
	tmpl := hostileJobTemplate(850 << 10)
	if got := len(tmpl.Spec.Template.Spec.Containers[0].Env[0].Value); got != 850<<10 {
		t.Errorf("jobTemplate's variable is %d bytes, want %d", got, 850<<10)
	}
}

func TestHostileCountComparesTheFewToTheFull(t *testing.T) {
	rows := func(fewLive, fewRSS, fullLive, fullRSS float64) []hostileRow {
		return []hostileRow{{what: "before", rssMiB: 40, liveMiB: 5}, {what: "few", rssMiB: fewRSS, liveMiB: fewLive}, {what: "during"}, {what: "full", rssMiB: fullRSS, liveMiB: fullLive}}
	}
	for _, c := range []struct {
		name string
		r    hostileResult
		want string
	}{
		{name: "without -hostile-few nothing is said", r: hostileResult{rows: rows(10, 60, 12, 62), fewRow: -1, fullRow: 3}, want: ""},
		{name: "a zero result says nothing either", r: hostileResult{rows: rows(10, 60, 12, 62)}, want: ""},
		// 600 more objects may cost 600 × 8 KiB = 4.7 MiB of live heap.
		{name: "growth within the per-object bound is met", r: hostileResult{rows: rows(10, 60, 14, 70), fewRow: 1, fullRow: 3, fewCreated: 60, fullCreated: 660},
			want: "The count of the tenant's objects: met. With 660 objects admitted against 60, each reading after a restart, the live heap is +4.0 MiB and RSS +10.0 MiB apart (target: the live heap at most 600 × 8 KiB = 4.7 MiB apart"},
		{name: "live heap beyond it is missed", r: hostileResult{rows: rows(10, 60, 15, 62), fewRow: 1, fullRow: 3, fewCreated: 60, fullCreated: 660},
			want: "The count of the tenant's objects: **missed**. With 660 objects admitted against 60, each reading after a restart, the live heap is +5.0 MiB"},
		{name: "RSS beyond the flat allowance is missed", r: hostileResult{rows: rows(10, 60, 11, 77), fewRow: 1, fullRow: 3, fewCreated: 60, fullCreated: 660},
			want: "**missed**"},
		{name: "a reading of a manager that was down is no measurement", r: hostileResult{rows: append(rows(10, 60, 11, 62)[:3], hostileRow{what: "full", down: true}), fewRow: 1, fullRow: 3},
			want: "**not measured**"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := hostileCount(&c.r)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("hostileCount = %q, want it to contain %q", got, c.want)
			}
		})
	}
}
