package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
func ms(d time.Duration) string   { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// measuredAsChart opens a section's "how measured" sentence: today, this machine, and the manager
// as the chart installs it.
func measuredAsChart() string {
	return fmt.Sprintf("Measured %s on %d cores (%s/%s), kwok cluster, manager as the chart's ServiceAccount with the chart's values (its defaults, plus any `-values` file in the command)",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}

// writeSecretSyncReport replaces the SecretSync section of the markdown file (between markers)
// and draws the charts.
func writeSecretSyncReport(path, imgDir string, r *secretSyncResult, o secretSyncOptions, cmd string) error {
	if err := os.MkdirAll(imgDir, 0o755); err != nil {
		return err
	}
	if err := drawSecretSync(filepath.Join(imgDir, "secretsync.png"), r); err != nil {
		return err
	}
	createRatio := r.oursCreate.Seconds() / r.floorCreate.Seconds()
	updateRatio := r.oursUpdate.Seconds() / r.floorUpdate.Seconds()
	nsP50, nsP99 := percentile(r.newNamespace, 0.5), percentile(r.newNamespace, 0.99)
	rpP50, rpP99 := percentile(r.repair, 0.5), percentile(r.repair, 0.99)
	var b strings.Builder
	fmt.Fprintf(&b, "## SecretSync\n\n")
	fmt.Fprintf(&b, "Measured %s on %d cores (%s/%s), kwok cluster with Kubernetes v1.36.3 binaries, manager "+
		"running as the chart's ServiceAccount with the chart's default values. Command: `%s`.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, cmd)
	fmt.Fprintf(&b, "| measure (%d target namespaces) | floor | platform-operators | ratio / value | target | |\n|---|---|---|---|---|---|\n", o.namespaces)
	fmt.Fprintf(&b, "| new source → all copies | %s | %s | %.2f× | ≤ 2× floor | %s |\n", secs(r.floorCreate), secs(r.oursCreate), createRatio, verdict(createRatio <= 2))
	fmt.Fprintf(&b, "| source update → all copies | %s | %s | %.2f× | ≤ 2× floor | %s |\n", secs(r.floorUpdate), secs(r.oursUpdate), updateRatio, verdict(updateRatio <= 2))
	fmt.Fprintf(&b, "| new namespace → copy (p50 / p99, %d samples) | | %s / %s | | ≤ 0.5 s p99 | %s |\n", len(r.newNamespace), ms(nsP50), ms(nsP99), verdict(nsP99 <= 500*time.Millisecond))
	fmt.Fprintf(&b, "| copy edited or deleted → repaired (p50 / p99, %d samples) | | %s / %s | | ≤ 1 s p99 | %s |\n", len(r.repair), ms(rpP50), ms(rpP99), verdict(rpP99 <= time.Second))
	ours := r.resyncWrites["secrets"] + r.resyncWrites["secretsyncs"] + int(r.managerWrites)
	var parts []string
	for _, res := range writeResources {
		parts = append(parts, fmt.Sprintf("%s %d", res, r.resyncWrites[res]))
	}
	fmt.Fprintf(&b, "| API writes during a resync with nothing to do (restart + every SecretSync re-enqueued) | | %d | | 0 | %s |\n", ours, verdict(ours == 0))
	maxRSS, minRSS := 0.0, 1e9
	for _, p := range r.mem {
		fmt.Fprintf(&b, "| manager RSS with %d unrelated 2 KiB Secrets (peak) | | %.1f MiB (%.1f MiB) | | ≤ 64 MiB | %s |\n", p.unrelated, p.rssMiB, p.peakMiB, verdict(p.rssMiB <= 64))
		maxRSS, minRSS = max(maxRSS, p.rssMiB), min(minRSS, p.rssMiB)
	}
	fmt.Fprintf(&b, "\nResync writes: apiserver_request_total deltas (mutating verbs) in the window: %s; the manager's own write counter: %.0f. "+
		"The table counts secrets and secretsyncs (only the manager writes them here) plus the manager's counter (which includes its "+
		"ServiceAccount patches); serviceaccounts and events are also written by kube-controller-manager, and serviceaccounts/token is "+
		"the bench's own TokenRequest for the restarted manager's kubeconfig (see the steady-state section: the audit log names it).\n", strings.Join(parts, ", "), r.managerWrites)
	fmt.Fprintf(&b, "\nRSS spread across the unrelated-Secret counts: %.1f MiB (flat means the unrelated Secrets are not cached).\n\n", maxRSS-minRSS)
	fmt.Fprintf(&b, "![SecretSync: time to reach all copies, floor vs manager; manager RSS vs unrelated Secrets](img/secretsync.png)\n\n")
	fmt.Fprintf(&b, "How it is measured: the floor is a bare client-go client (no rate limit) writing the same %d Secrets "+
		"(same size, one per namespace) with %d concurrent writers, on the same cluster in the same run, once before and once after "+
		"the manager's runs (the faster is kept); both are timed "+
		"from the first write until the last object is visible through a watch. Latencies are from the triggering API call "+
		"(namespace create, copy update or delete) to the repaired copy being visible through a watch. Memory is VmRSS of "+
		"the manager process after a restart and 10 s idle. Writes are `apiserver_request_total` deltas for mutating verbs.\n",
		o.namespaces, o.workers)
	return replaceSection(path, "secretsync", b.String())
}

// replaceSection writes body between <!-- bench:NAME:begin --> and <!-- bench:NAME:end --> in
// path, appending the section if it is not there yet.
func replaceSection(path, name, body string) error {
	begin, end := "<!-- bench:"+name+":begin -->", "<!-- bench:"+name+":end -->"
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	text := string(old)
	if text == "" {
		text = "# Benchmarks\n\nProduced by `make bench` (tests/bench): each section is rewritten by its benchmark.\n"
	}
	section := begin + "\n" + body + end
	if i, j := strings.Index(text, begin), strings.Index(text, end); i >= 0 && j > i {
		text = text[:i] + section + text[j+len(end):]
	} else {
		text = strings.TrimRight(text, "\n") + "\n\n" + section + "\n"
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

func drawSecretSync(path string, r *secretSyncResult) error {
	p := plot.New()
	p.Title.Text = "SecretSync: time until every copy is visible"
	p.Y.Label.Text = "seconds"
	w := vg.Points(18)
	floor := plotter.Values{r.floorCreate.Seconds(), r.floorUpdate.Seconds()}
	ours := plotter.Values{r.oursCreate.Seconds(), r.oursUpdate.Seconds()}
	bf, err := plotter.NewBarChart(floor, w)
	if err != nil {
		return err
	}
	bf.Color = color.RGBA{R: 150, G: 150, B: 150, A: 255}
	bf.Offset = -w / 2
	bo, err := plotter.NewBarChart(ours, w)
	if err != nil {
		return err
	}
	bo.Color = color.RGBA{R: 30, G: 100, B: 200, A: 255}
	bo.Offset = w / 2
	p.Add(bf, bo)
	p.Legend.Add("floor (bare client)", bf)
	p.Legend.Add("platform-operators", bo)
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Max = 1.35 * max(r.floorCreate.Seconds(), r.floorUpdate.Seconds(), r.oursCreate.Seconds(), r.oursUpdate.Seconds())
	p.NominalX("new source", "source update")

	m := plot.New()
	m.Title.Text = "Manager RSS vs unrelated Secrets"
	m.X.Label.Text = "unrelated 2 KiB Secrets"
	m.Y.Label.Text = "MiB"
	pts := make(plotter.XYs, len(r.mem))
	for i, pt := range r.mem {
		pts[i].X, pts[i].Y = float64(pt.unrelated), pt.rssMiB
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	m.Add(line, points)
	m.Y.Min = 0
	m.Y.Max = 80

	const width, height = 12 * vg.Centimeter, 8 * vg.Centimeter
	img := vgimg.New(2*width, height)
	dc := draw.New(img)
	left, right := splitHorizontal(dc, width)
	p.Draw(left)
	m.Draw(right)
	return savePNG(img, path)
}
