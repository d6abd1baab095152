package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

// The amplification benchmark (issue 34, "Work is proportional to what changed"): a tenant makes
// a fixed series of writes the manager reacts to, and the API server's audit log counts every
// request the manager makes in each kind's window, by verb and resource. Run it once with the
// manager and chart of an older checkout (-manager-src, -amplification-json) and once with this
// one (-amplification-before naming that file) for the before/after table.

// managerUser is the user the chart's ServiceAccount authenticates as: the audit policy logs
// every request it makes (the policy is fixed when the cluster starts, before the chart is
// installed; runAmplification checks the installed chart agrees).
const managerUser = "system:serviceaccount:" + releaseNamespace + ":" + releaseName

// amplificationAuditRule logs, at Metadata level, every request of the manager's user. It comes
// first in the policy: the first matching rule decides.
const amplificationAuditRule = `- level: Metadata
  users: ["` + managerUser + `"]
`

// auditPolicy is the API server's audit policy for the scenarios asked for: the steady-state
// benchmark's writes to its resources, and with amplification every request of the manager.
func auditPolicy(steady, amplification bool) string {
	if !amplification {
		return steadyAuditPolicy
	}
	head, rules, _ := strings.Cut(steadyAuditPolicy, "rules:\n")
	if !steady {
		rules = "- level: None\n"
	}
	return head + "rules:\n" + amplificationAuditRule + rules
}

const (
	ampSourceNS = "amp-source"
	ampReqNS    = "amp-requests"
	ampOffered  = "amp-offered"
	ampPull     = "amp-pull"
	ampSync     = "amp-sync"
	ampSchedNS  = "amp-scheduling"
	ampSJ       = "amp-sj"
	ampLabel    = "bench.platform-operators.io/amp-target"
	// ampTouch is the annotation a tenant's touch sets (not a key of ours).
	ampTouch = "bench.example/touch"
)

type amplificationOptions struct {
	// requests are the CopyRequests naming the offered ConfigMap, of offerBytes of data.
	requests, offerBytes int
	// namespaces are the SecretSync's target namespaces.
	namespaces int
	// writes is how many writes of each kind the tenant makes, one every interval.
	writes   int
	interval time.Duration
	// settle is how long a window lasts after its last write (the run-now window waits a minute
	// more: a token within the minute runs at its end).
	settle time.Duration
	// jsonOut, when set, is where this run's counts are saved; before names such a file of an
	// earlier run (another checkout's manager and chart), shown beside this run's.
	jsonOut, before string
	// src is the checkout whose manager and chart ran (-manager-src), for the report.
	src string
}

// ampWindow is one kind of tenant write and what the manager did in its window.
type ampWindow struct {
	Kind   string         `json:"kind"`
	Writes int            `json:"writes"`
	Window time.Duration  `json:"window"`
	Counts map[string]int `json:"counts"` // "verb resource[/subresource]" → requests
	Leases int            `json:"leases"` // leader-election requests in the window, left out of Counts
}

// ampResult is one run of the scenario.
type ampResult struct {
	Commit  string      `json:"commit"`
	Src     string      `json:"src"`
	When    time.Time   `json:"when"`
	Load    string      `json:"load"`
	Windows []ampWindow `json:"windows"`
}

// The kinds of write, in the order they run and the report lists them.
const (
	ampQuiet      = "nothing written (the same length as a window of writes)"
	ampOfferTouch = "annotation touch on an offered ConfigMap named by the CopyRequests"
	ampOfferData  = "data change of that ConfigMap (every copy must follow)"
	ampCopyEdit   = "edit of a SecretSync copy's data (one namespace each)"
	ampCopyDelete = "delete of a SecretSync copy (one namespace each)"
	ampSATouch    = "annotation touch on a ServiceAccount listing a copy"
	ampRunNow     = "run-now token on a ScheduledJob (a new token each)"
)

// managerRequests counts the manager's completed requests by "verb resource[/subresource]":
// watches are left out (an informer's watch completes when it is renewed, whatever the tenant
// did), and so are leader-election requests (leases; a renewal every few seconds), counted apart.
func managerRequests(ws []auditWrite, user string) (counts map[string]int, leases int) {
	counts = map[string]int{}
	for _, w := range ws {
		if w.User != user || w.Verb == "watch" {
			continue
		}
		if w.Resource == "leases" {
			leases++
			continue
		}
		counts[w.Verb+" "+w.target()]++
	}
	return counts, leases
}

// total is the sum of the counts.
func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// perWrite is "n (a.b per write)" or "0".
func perWrite(n, writes int) string {
	if n == 0 || writes == 0 {
		return fmt.Sprintf("%d", n)
	}
	return fmt.Sprintf("%d (%.1f)", n, float64(n)/float64(writes))
}

// breakdown is "get configmaps 30, update secrets 10", most first.
func breakdown(counts map[string]int) string {
	ks := make([]string, 0, len(counts))
	for k := range counts {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(a, b int) bool {
		if counts[ks[a]] != counts[ks[b]] {
			return counts[ks[a]] > counts[ks[b]]
		}
		return ks[a] < ks[b]
	})
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func runAmplification(ctx context.Context, e *env, o amplificationOptions) (*ampResult, error) {
	cs := e.cs
	if e.cluster.AuditPolicy == "" {
		return nil, fmt.Errorf("amplification: the cluster was created without an audit policy (setup gives it one when the scenario is asked for)")
	}
	spec, err := testbed.ReadManagerSpec(ctx, cs, releaseNamespace, releaseName, "manager")
	if err != nil {
		return nil, err
	}
	if u := "system:serviceaccount:" + spec.Namespace + ":" + spec.ServiceAccount; u != managerUser {
		return nil, fmt.Errorf("amplification: the manager runs as %s, the audit policy logs %s", u, managerUser)
	}
	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return nil, err
	}
	logf("amplification: %d CopyRequests of a %d KiB offered ConfigMap, a SecretSync to %d namespaces, a ScheduledJob", o.requests, o.offerBytes/1024, o.namespaces)
	if err := ampSetUp(ctx, cs, dyn, o); err != nil {
		return nil, fmt.Errorf("amplification: setting up: %w", err)
	}
	// Let the first passes, Events and status writes end before the first window.
	time.Sleep(15 * time.Second)

	res := &ampResult{Src: o.src, Commit: gitDescribe(ctx, o.src), When: time.Now().UTC(), Load: loadAverage()}
	type span struct {
		kind     string
		from, to time.Time
	}
	var spans []span
	window := func(kind string, settle time.Duration, write func(i int) error) error {
		logf("amplification: %d × %s", o.writes, kind)
		from := time.Now()
		for i := range o.writes {
			if err := write(i); err != nil {
				return fmt.Errorf("%s %d: %w", kind, i, err)
			}
			if i < o.writes-1 {
				time.Sleep(o.interval)
			}
		}
		time.Sleep(settle)
		spans = append(spans, span{kind, from, time.Now()})
		return nil
	}
	writesLen := time.Duration(o.writes-1) * o.interval
	touch := func(i int) []byte {
		return fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"%d-%d"}}}`, ampTouch, time.Now().UnixNano(), i)
	}
	steps := []struct {
		kind   string
		settle time.Duration
		write  func(i int) error
	}{
		{ampQuiet, o.settle, func(int) error { return nil }},
		{ampOfferTouch, o.settle, func(i int) error {
			_, err := cs.CoreV1().ConfigMaps(ampSourceNS).Patch(ctx, ampOffered, types.MergePatchType, touch(i), metav1.PatchOptions{})
			return err
		}},
		{ampOfferData, o.settle, func(i int) error {
			p := fmt.Appendf(nil, `{"data":{"version":"v%d"}}`, i+1)
			_, err := cs.CoreV1().ConfigMaps(ampSourceNS).Patch(ctx, ampOffered, types.MergePatchType, p, metav1.PatchOptions{})
			return err
		}},
		{ampCopyEdit, o.settle, func(i int) error {
			p := []byte(`{"data":{"tampered":"eA=="}}`)
			_, err := cs.CoreV1().Secrets(ampNS(i)).Patch(ctx, ampPull, types.MergePatchType, p, metav1.PatchOptions{})
			return err
		}},
		{ampCopyDelete, o.settle, func(i int) error {
			return cs.CoreV1().Secrets(ampNS(o.writes+i)).Delete(ctx, ampPull, metav1.DeleteOptions{})
		}},
		{ampSATouch, o.settle, func(i int) error {
			_, err := cs.CoreV1().ServiceAccounts(ampNS(i)).Patch(ctx, "default", types.MergePatchType, touch(i), metav1.PatchOptions{})
			return err
		}},
		// A token within a minute of the last run-now Job waits for the minute's end (issue 34):
		// the window lasts until then, so the delayed Job is counted too.
		{ampRunNow, o.settle + max(time.Minute-writesLen, 0), func(i int) error {
			p := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"t-%d-%d"}}}`, keys.AnnotationRunNow, res.When.Unix(), i)
			_, err := dyn.Resource(sjGVR).Namespace(ampSchedNS).Patch(ctx, ampSJ, types.MergePatchType, p, metav1.PatchOptions{})
			return err
		}},
	}
	for _, s := range steps {
		if err := window(s.kind, s.settle, s.write); err != nil {
			return nil, fmt.Errorf("amplification: %w", err)
		}
	}
	// The log backend writes each event as the request completes; a moment for the file.
	time.Sleep(time.Second)
	log, err := e.cluster.AuditLog(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range spans {
		ws, err := parseAuditWrites(log, s.from, s.to)
		if err != nil {
			return nil, err
		}
		w := ampWindow{Kind: s.kind, Writes: o.writes, Window: s.to.Sub(s.from).Round(time.Second)}
		if s.kind == ampQuiet {
			w.Writes = 0
		}
		w.Counts, w.Leases = managerRequests(ws, managerUser)
		logf("amplification: %s: %d requests in %s (%s); leases %d", s.kind, total(w.Counts), w.Window, breakdown(w.Counts), w.Leases)
		res.Windows = append(res.Windows, w)
	}
	if err := ampTearDown(ctx, cs, dyn, o); err != nil {
		logf("amplification: cleaning up: %v", err)
	}
	return res, nil
}

func ampNS(i int) string { return fmt.Sprintf("amp-t-%04d", i) }

// ampSetUp creates the offered ConfigMap and the CopyRequests naming it, the SecretSync's
// source and target namespaces (each default ServiceAccount listing the copy), and the
// ScheduledJob, and waits until every copy is there.
func ampSetUp(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, o amplificationOptions) error {
	if o.namespaces < 2*o.writes {
		return fmt.Errorf("-amplification-namespaces %d: the copy edits and deletes need %d (two per write)", o.namespaces, 2*o.writes)
	}
	for _, ns := range []string{ampSourceNS, ampReqNS, ampSchedNS} {
		if err := ensureNamespace(ctx, cs, ns, nil); err != nil {
			return err
		}
	}
	if err := parallel(ctx, o.namespaces, 32, func(ctx context.Context, i int) error {
		return ensureNamespace(ctx, cs, ampNS(i), map[string]string{ampLabel: "true"})
	}); err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ampOffered, Namespace: ampSourceNS,
		Labels:      map[string]string{keys.LabelOffer: "true"},
		Annotations: map[string]string{keys.AnnotationOfferNamespaces: ampReqNS}},
		Data: map[string]string{"blob": strings.Repeat("o", o.offerBytes), "version": "v0"}}
	if _, err := cs.CoreV1().ConfigMaps(ampSourceNS).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := parallel(ctx, o.requests, 8, func(ctx context.Context, i int) error {
		cr := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "CopyRequest",
			"metadata": map[string]any{"name": fmt.Sprintf("req-%02d", i), "namespace": ampReqNS},
			"spec": map[string]any{"source": map[string]any{"kind": "ConfigMap", "namespace": ampSourceNS, "name": ampOffered},
				"name": fmt.Sprintf("copy-%02d", i)},
		}}
		_, err := dyn.Resource(copyRequestGVR).Namespace(ampReqNS).Create(ctx, cr, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ampSourceNS, Name: ampPull}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"harbor.example.com":{"auth":"Ym9vdDpib290"}}}`)}}
	if _, err := cs.CoreV1().Secrets(ampSourceNS).Create(ctx, src, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	ss := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "SecretSync",
		"metadata": map[string]any{"name": ampSync},
		"spec": map[string]any{
			"source":             map[string]any{"namespace": ampSourceNS, "name": ampPull},
			"target":             map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{ampLabel: "true"}}},
			"imagePullSecretFor": []any{"default"},
		},
	}}
	if _, err := dyn.Resource(secretSyncGVR).Create(ctx, ss, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	tmpl, err := kruntime.DefaultUnstructuredConverter.ToUnstructured(ptr.To(jobTemplate()))
	if err != nil {
		return err
	}
	sj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "ScheduledJob",
		"metadata": map[string]any{"name": ampSJ, "namespace": ampSchedNS},
		"spec":     map[string]any{"schedule": "0 0 1 1 *", "jobTemplate": tmpl},
	}}
	if _, err := dyn.Resource(sjGVR).Namespace(ampSchedNS).Create(ctx, sj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Every copy there, and every default ServiceAccount listing the pull secret.
	var copies, synced, listed int
	err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := cs.CoreV1().ConfigMaps(ampReqNS).List(ctx, metav1.ListOptions{LabelSelector: keys.LabelCopyRequest})
		if err != nil {
			return false, err
		}
		s, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{LabelSelector: keys.LabelSecretSync + "=" + ampSync})
		if err != nil {
			return false, err
		}
		sas, err := cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=default"})
		if err != nil {
			return false, err
		}
		copies, synced, listed = len(c.Items), len(s.Items), 0
		for _, sa := range sas.Items {
			if strings.HasPrefix(sa.Namespace, "amp-t-") && slices.Contains(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: ampPull}) {
				listed++
			}
		}
		return copies >= o.requests && synced >= o.namespaces && listed >= o.namespaces, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("after 5 minutes: %d of %d CopyRequest copies, %d of %d SecretSync copies, %d of %d ServiceAccounts listing %s",
			copies, o.requests, synced, o.namespaces, listed, o.namespaces, ampPull)
	}
	return err
}

// ampTearDown deletes what ampSetUp made, so a later scenario in the same run starts clean.
func ampTearDown(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, o amplificationOptions) error {
	var errs []error
	if err := dyn.Resource(secretSyncGVR).Delete(ctx, ampSync, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	for _, ns := range []string{ampSourceNS, ampReqNS, ampSchedNS} {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	for i := range o.namespaces {
		if err := cs.CoreV1().Namespaces().Delete(ctx, ampNS(i), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// saveAmplification writes the run's counts as JSON (for a later run's -amplification-before).
func saveAmplification(path string, r *ampResult) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func loadAmplification(path string) (*ampResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r ampResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// amplificationSection is section amplification: this run's requests per write by kind, and an
// earlier run's beside them when before is not nil.
func amplificationSection(r, before *ampResult, o amplificationOptions, cmd string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## API requests of the manager per tenant write\n\n")
	fmt.Fprintf(&b, "%s. Command: `%s`", measuredAsChart(), cmd)
	if r.Commit != "" {
		fmt.Fprintf(&b, " (manager and chart at %s)", r.Commit)
	}
	fmt.Fprintf(&b, "; load average at the start: %s.", r.Load)
	if before != nil {
		fmt.Fprintf(&b, " Before: the same scenario with the manager and chart of %s (`%s`), measured %s, load average %s.",
			before.Commit, before.Src, before.When.Format("2006-01-02 15:04 UTC"), before.Load)
	}
	fmt.Fprintf(&b, "\n\nA tenant makes %d writes of each kind, one every %s; the manager's requests are counted from the first write until %s after the last (the run-now window until the minute after the first token is over, as a token within the minute waits for it). "+
		"The setup: %d CopyRequests in one namespace naming one offered %d KiB ConfigMap; a SecretSync copying a `kubernetes.io/dockerconfigjson` Secret to %d namespaces with `imagePullSecretFor: [default]` (each write touches another namespace's copy or ServiceAccount); one ScheduledJob with a suspended Job template. "+
		"Counted: every request the API server's audit log records from the manager's ServiceAccount (a Metadata-level rule for that user), by verb and resource; left out are watches (an informer's watch completes when it is renewed, whatever the tenant did) and the leader election's `leases` requests (its renewals, counted apart in the log).\n\n",
		o.writes, o.interval, o.settle, o.requests, o.offerBytes/1024, o.namespaces)
	if before != nil {
		fmt.Fprintf(&b, "| tenant write (× %d) | before: requests (per write) | after: requests (per write) | before: by verb and resource | after: by verb and resource |\n|---|---|---|---|---|\n", o.writes)
	} else {
		fmt.Fprintf(&b, "| tenant write (× %d) | requests (per write) | by verb and resource |\n|---|---|---|\n", o.writes)
	}
	find := func(res *ampResult, kind string) *ampWindow {
		if res == nil {
			return nil
		}
		for i := range res.Windows {
			if res.Windows[i].Kind == kind {
				return &res.Windows[i]
			}
		}
		return nil
	}
	for _, w := range r.Windows {
		if before == nil {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", w.Kind, perWrite(total(w.Counts), w.Writes), breakdown(w.Counts))
			continue
		}
		bw := find(before, w.Kind)
		bn, bd := "not measured", ""
		if bw != nil {
			bn, bd = perWrite(total(bw.Counts), bw.Writes), breakdown(bw.Counts)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", w.Kind, bn, perWrite(total(w.Counts), w.Writes), bd, breakdown(w.Counts))
	}
	var leases []string
	for _, w := range r.Windows {
		leases = append(leases, fmt.Sprintf("%d in %s", w.Leases, w.Window))
	}
	fmt.Fprintf(&b, "\nLeader-election requests left out, per window in order: %s.\n", strings.Join(leases, ", "))
	return b.String()
}

// gitDescribe is the short commit of the checkout at dir, "+dirty" when tracked files changed.
func gitDescribe(ctx context.Context, dir string) string {
	git := func(args ...string) (string, error) {
		c := exec.CommandContext(ctx, "git", args...)
		c.Dir = dir
		out, err := c.Output()
		return strings.TrimSpace(string(out)), err
	}
	commit, err := git("rev-parse", "--short", "HEAD")
	if err != nil {
		return "unknown"
	}
	if st, err := git("status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
		commit += "+dirty"
	}
	return commit
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, as uptime prints them.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}
