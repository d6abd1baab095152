package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			want:    []string{"The API server refused 0 ConfigMaps, 200 Secrets and 150 Jobs of them at admission (the first: \"denied\")"},
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
			if len(tt.refused) > 0 {
				r.refusal = "denied"
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
