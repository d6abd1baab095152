package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/keys"
)

// hostileOptions shape the hostile-tenant memory scenario: a tenant with namespace rights only
// creates large objects carrying every label key the manager's caches select on.
type hostileOptions struct {
	configMaps, secrets, jobs int
	// bytes is the size of each object: data (ConfigMaps, Secrets) or pod template (Jobs), plus
	// an annotation of a quarter of it (the API server allows 256 KiB of annotations).
	bytes int
}

const hostileNS = "hostile-tenant"

// hostileFlatMiB is how much RSS may grow over the first reading for the scenario's target
// ("flat") to be met: the noise of a restart and the GC's timing, not the tenant's objects
// (300 ConfigMaps of 800 KiB alone are 234 MiB).
const hostileFlatMiB = 16

// hostileLabels are the label keys the manager's caches select on for Secrets and ConfigMaps
// (any value: the selectors test for the key), cycled over the objects.
var hostileLabels = []string{keys.LabelSecretSync, keys.LabelCopyRequest, keys.LabelOffer}

// hostileRow is one reading of the manager's memory.
type hostileRow struct {
	what             string
	rssMiB, peakMiB  float64
	heapMiB, liveMiB float64
	killed, restarts int // OOM kills and restarts so far
	down             bool
	note             string
}

type hostileResult struct {
	limit int64 // the manager's cgroup limit in bytes, 0 for none
	rows  []hostileRow
	// created and refused are how many hostile objects the API server took and refused, by kind;
	// refusal is the first refusal's message.
	created, refused map[string]int
	refusal          string
}

// runHostile reads the manager's memory before, while and after a hostile tenant fills its
// namespace. It restarts the manager, as the kubelet would, when the kernel kills it at its
// memory limit, counting the kills, and never waits on a dead manager.
func runHostile(ctx context.Context, e *env, o hostileOptions) (*hostileResult, error) {
	cs := e.cs
	res := &hostileResult{created: map[string]int{}, refused: map[string]int{}}
	if e.manager.Cgroup != nil {
		res.limit = e.manager.Cgroup.Limit
	}
	if err := ensureNamespace(ctx, cs, hostileNS, nil); err != nil {
		return nil, err
	}
	// killed counts the kernel's OOM kills in every cgroup the manager ran in; counted is what
	// was already added from the current one (each start makes a new cgroup).
	var killed, restarts, counted int
	harvest := func() {
		k := oomKills(e)
		killed += max(k-counted, 0)
		counted = k
	}
	start := func() error {
		harvest()
		e.stopManager()
		counted = 0
		err := e.startManager(ctx)
		harvest()
		return err
	}
	alive := func() bool {
		if e.manager == nil {
			return false // the last start failed before the process ran
		}
		_, _, err := procMemory(e.manager.Cmd.Process.Pid)
		return err == nil
	}
	read := func(what string, peak float64, note string) {
		harvest()
		row := hostileRow{what: what, killed: killed, restarts: restarts, note: note, liveMiB: -1}
		if !alive() {
			row.down = true
		} else if rss, hwm, err := procMemory(e.manager.Cmd.Process.Pid); err != nil {
			row.down = true
		} else {
			row.rssMiB, row.peakMiB = rss, max(hwm, peak)
			if mm, err := managerMemoryMetrics(ctx, e); err == nil {
				row.heapMiB, row.liveMiB = mm.heapInuseMiB, mm.heapLiveMiB
			}
		}
		logf("hostile (%s): RSS %.1f MiB, peak %.1f MiB, heap %.1f MiB, live %.1f MiB, OOM kills %d, restarts %d %s", what, row.rssMiB, row.peakMiB, row.heapMiB, row.liveMiB, killed, restarts, note)
		res.rows = append(res.rows, row)
	}
	// revive starts the manager again after it died, up to 3 times (a kubelet would keep
	// trying with a back-off: three are enough to tell a crash loop); it returns the note for
	// the table.
	revive := func(what string) string {
		for range 3 {
			restarts++
			err := start()
			if err == nil {
				return what + "; restarted"
			}
			logf("hostile: the manager did not get ready after restart %d: %v", restarts, err)
		}
		return what + "; not ready after 3 restarts"
	}
	if err := start(); err != nil {
		return nil, err
	}
	time.Sleep(20 * time.Second)
	read("before: the tenant's namespace empty, 20 s after a start", 0, "")

	// During: the tenant creates its objects while a sampler reads the manager's RSS.
	pid := e.manager.Cmd.Process.Pid
	var peak float64
	var mu sync.Mutex
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if rss, hwm, err := procMemory(pid); err == nil {
				mu.Lock()
				peak = max(peak, rss, hwm)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	// Objects of about o.bytes: three quarters data and a quarter annotation; a Job's pod
	// template holds half in an environment variable, and the annotation on the Job and on its
	// template.
	blob := bytes.Repeat([]byte("x"), o.bytes*3/4)
	annotation := strings.Repeat("y", o.bytes/4)
	meta := func(kind string, i int, label string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name:        fmt.Sprintf("hostile-%s-%04d", kind, i),
			Labels:      map[string]string{label: "x"},
			Annotations: map[string]string{"hostile.example/pad": annotation},
		}
	}
	created := func(kind string, err error) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil || apierrors.IsAlreadyExists(err):
			res.created[kind]++
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			// Refused at admission (the chart's ValidatingAdmissionPolicies keep our keys to the
			// manager): a defence, counted, not a failure of the run.
			res.refused[kind]++
			if res.refusal == "" {
				res.refusal = err.Error()
			}
		default:
			return err
		}
		return nil
	}
	logf("hostile: %d ConfigMaps, %d Secrets and %d Jobs of about %d KiB, labelled with %v and %s", o.configMaps, o.secrets, o.jobs, o.bytes/1024, hostileLabels, keys.LabelCreatedBy)
	err := errors.Join(
		parallel(ctx, o.configMaps, 8, func(ctx context.Context, i int) error {
			_, err := cs.CoreV1().ConfigMaps(hostileNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta("cm", i, hostileLabels[i%len(hostileLabels)]),
				Data: map[string]string{"blob": string(blob)}}, metav1.CreateOptions{})
			return created("ConfigMaps", err)
		}),
		parallel(ctx, o.secrets, 8, func(ctx context.Context, i int) error {
			_, err := cs.CoreV1().Secrets(hostileNS).Create(ctx, &corev1.Secret{ObjectMeta: meta("secret", i, hostileLabels[i%len(hostileLabels)]),
				Data: map[string][]byte{"blob": blob}}, metav1.CreateOptions{})
			return created("Secrets", err)
		}),
		parallel(ctx, o.jobs, 8, func(ctx context.Context, i int) error {
			_, err := cs.BatchV1().Jobs(hostileNS).Create(ctx, hostileJob(meta("job", i, keys.LabelCreatedBy), string(blob[:o.bytes/2])), metav1.CreateOptions{})
			return created("Jobs", err)
		}),
	)
	if err != nil {
		close(stop)
		<-sampled
		return nil, fmt.Errorf("creating the hostile objects: %w", err)
	}
	// Let the watches deliver and the manager settle (or die).
	time.Sleep(20 * time.Second)
	close(stop)
	<-sampled
	note := ""
	if !alive() {
		harvest()
		note = revive("killed while the objects were created")
	}
	mu.Lock()
	p := peak
	mu.Unlock()
	logf("hostile: created %v, refused at admission %v", res.created, res.refused)
	read(fmt.Sprintf("during: %d ConfigMaps, %d Secrets, %d Jobs created, 20 s later", res.created["ConfigMaps"], res.created["Secrets"], res.created["Jobs"]), p, note)

	// With them in place, a start lists them all.
	note = ""
	if err := start(); err != nil {
		note = revive("not ready after the restart: " + err.Error())
	} else {
		time.Sleep(20 * time.Second)
		if !alive() {
			note = revive("killed within 20 s of a ready start")
		}
	}
	read("with them in place, after a restart", 0, note)

	logf("hostile: deleting the tenant's objects")
	dels := []func() error{func() error {
		return cs.BatchV1().Jobs(hostileNS).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)},
			metav1.ListOptions{LabelSelector: keys.LabelCreatedBy})
	}}
	for _, l := range hostileLabels {
		dels = append(dels,
			func() error {
				return cs.CoreV1().ConfigMaps(hostileNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: l})
			},
			func() error {
				return cs.CoreV1().Secrets(hostileNS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: l})
			})
	}
	for _, del := range dels {
		if err := deleteCollection(ctx, del); err != nil {
			return nil, err
		}
	}
	note = ""
	if !alive() {
		note = revive("it was down")
	}
	time.Sleep(30 * time.Second)
	read("after: the objects deleted, 30 s later", 0, note)
	return res, nil
}

// hostileJob is a suspended Job carrying the created-by label with a pod template of about
// len(pad) bytes (one environment variable).
func hostileJob(meta metav1.ObjectMeta, pad string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: meta.Annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "c", Image: "busybox",
						Env: []corev1.EnvVar{{Name: "PAD", Value: pad}}}},
				},
			},
		},
	}
}

// oomKills is how often the kernel killed a process of the manager's memory cgroup at its limit
// (cgroup v1 memory.oom_control oom_kill, v2 memory.events oom_kill); 0 without a cgroup.
func oomKills(e *env) int {
	if e.manager == nil || e.manager.Cgroup == nil {
		return 0
	}
	file := "memory.oom_control"
	if e.manager.Cgroup.Version == 2 {
		file = "memory.events"
	}
	b, err := os.ReadFile(filepath.Join(e.manager.Cgroup.Dir, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// writeHostileReport writes section hostile.
func writeHostileReport(path string, r *hostileResult, o hostileOptions, cmd string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## A hostile tenant's objects and the manager's memory\n\n")
	fmt.Fprintf(&b, "%s. Command: `%s`.\n\n", measuredAsChart(), cmd)
	limit := "no memory limit (`-memory-limit=off`)"
	if r.limit > 0 {
		limit = fmt.Sprintf("the chart's `resources.limits.memory`, %s, enforced by a memory cgroup as the kubelet would", mib(r.limit))
	}
	fmt.Fprintf(&b, "A tenant with rights in its own namespace only creates %d ConfigMaps and %d Secrets of about %d KiB (%d KiB of data, a %d KiB annotation), each labelled with one of `%s` (value `x`), and %d suspended Jobs of about as much labelled `%s` (a %d KiB environment variable in the pod template, the annotation on the Job and on its template): every key the manager's caches select on. The manager runs under %s; when the kernel kills it at that limit the bench restarts it, as the kubelet would (three times at most). Peak RSS is the process's high-water mark since it started (VmHWM, and the 500 ms samples while the objects are created). Target: RSS flat (within %d MiB of the first row) and under the limit, no kill.\n\n",
		o.configMaps, o.secrets, o.bytes/1024, o.bytes*3/4/1024, o.bytes/4/1024, strings.Join(hostileLabels, "`, `"), o.jobs, keys.LabelCreatedBy, o.bytes/2/1024, limit, hostileFlatMiB)
	if len(r.refused) > 0 {
		fmt.Fprintf(&b, "The API server refused %d ConfigMaps, %d Secrets and %d Jobs of them at admission (the first: %q); the table is what the rest did.\n\n",
			r.refused["ConfigMaps"], r.refused["Secrets"], r.refused["Jobs"], r.refusal)
	}
	fmt.Fprintf(&b, "| phase | RSS | peak RSS | Go heap in use | Go heap live after the last GC | OOM kills / restarts | |\n|---|---|---|---|---|---|---|\n")
	killedOrDown, growth := false, 0.0
	for i, row := range r.rows {
		rss, peak, heap, live := "down", "", "", ""
		if !row.down {
			rss, peak, heap = fmt.Sprintf("%.1f MiB", row.rssMiB), fmt.Sprintf("%.1f MiB", row.peakMiB), fmt.Sprintf("%.1f MiB", row.heapMiB)
			live = "n/a"
			if row.liveMiB >= 0 {
				live = fmt.Sprintf("%.1f MiB", row.liveMiB)
			}
			if i > 0 {
				growth = max(growth, row.rssMiB-r.rows[0].rssMiB)
			}
		}
		killedOrDown = killedOrDown || row.down || row.killed > 0
		v := ""
		switch share := row.peakMiB * (1 << 20) / float64(max(r.limit, 1)); {
		case row.down || row.killed > 0 || (r.limit > 0 && share >= 0.98):
			v = "**limit reached**"
		case r.limit > 0 && share >= 0.9:
			v = fmt.Sprintf("**%.0f%% of the limit**", 100*share)
		}
		what := row.what
		if row.note != "" {
			what += " (" + row.note + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d / %d | %s |\n", what, rss, peak, heap, live, row.killed, row.restarts, v)
	}
	switch {
	case killedOrDown:
		fmt.Fprintf(&b, "\nResult: **missed**: the tenant's objects took the manager to its memory limit and the kernel killed it.\n")
	case growth > hostileFlatMiB:
		fmt.Fprintf(&b, "\nResult: **missed**: RSS grew by %.1f MiB with the tenant's objects (flat: at most %d MiB over the first row).\n", growth, hostileFlatMiB)
	default:
		fmt.Fprintf(&b, "\nResult: met: RSS flat (at most %.1f MiB over the first row, allowed %d MiB) and no kill.\n", growth, hostileFlatMiB)
	}
	return replaceSection(path, "hostile", b.String())
}
