package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

// The steady-state benchmark: API writes while nothing changes, with ServiceAccounts filled by
// imagePullSecretFor and two SecretSyncs that want the same copy name (the chart's pull-secret
// sync beside an admin's): zero is the target, a ping-pong between the two shows as thousands.

const (
	steadyPull  = "bench-pull"
	steadyChart = "bench-pull-chart"
	steadyAdmin = "bench-pull-admin"
)

type steadyOptions struct {
	namespaces int
	// quiet is how long writes are counted with nothing happening at all.
	quiet time.Duration
}

type steadyResult struct {
	namespaces int
	// quiet and resync are apiserver_request_total deltas (mutating verbs) by resource: over a
	// window with nothing happening, and over a restart plus a re-enqueue of every SecretSync.
	quiet, resync map[string]int
	// managerQuiet and managerResync are the manager's own write counter by op over the windows.
	managerQuiet, managerResync map[string]float64
	quietFor                    time.Duration
	// quietAudit and resyncAudit are the writes the API server's audit log recorded in the
	// windows (steadyAuditPolicy), with who made them; excluded are the bench's own
	// TokenRequests among them (benchTokenRequest).
	quietAudit, resyncAudit       []auditWrite
	quietExcluded, resyncExcluded []auditWrite
	benchUser, managerSA          string
}

func runSteadyState(ctx context.Context, e *env, o steadyOptions) (*steadyResult, error) {
	cs := e.cs
	if e.cluster.AuditPolicy == "" {
		return nil, fmt.Errorf("steady: the cluster was created without an audit policy (setup gives it one when the scenario is asked for)")
	}
	logf("steady: %d target namespaces (reused when they exist)", o.namespaces)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sourceNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if err := parallel(ctx, o.namespaces, 64, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i), Labels: map[string]string{targetLabel: "true"}}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return nil, err
	}
	if err := settle(ctx, cs, o.namespaces); err != nil {
		return nil, err
	}
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: sourceNS, Name: steadyPull}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"harbor.example.com":{"auth":"Ym9vdDpib290"}}}`)}}
	if _, err := cs.CoreV1().Secrets(sourceNS).Create(ctx, src, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return nil, err
	}
	// The chart's pull-secret sync first, so it holds the copies; the admin's finds them held.
	for _, name := range []string{steadyChart, steadyAdmin} {
		ss := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "SecretSync",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"source":             map[string]any{"namespace": sourceNS, "name": steadyPull},
				"target":             map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{targetLabel: "true"}}},
				"imagePullSecretFor": []any{"default"},
			},
		}}
		if _, err := dyn.Resource(secretSyncGVR).Create(ctx, ss, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		if name == steadyChart {
			if err := waitPullSecretListed(ctx, e, o.namespaces); err != nil {
				return nil, err
			}
		}
	}
	// Let the admin's SecretSync find every target held (and a fight, if any, get going).
	time.Sleep(10 * time.Second)
	if err := waitPullSecretListed(ctx, e, o.namespaces); err != nil {
		return nil, err
	}

	res := &steadyResult{namespaces: o.namespaces, quietFor: o.quiet}
	if res.benchUser, err = whoAmI(ctx, cs); err != nil {
		return nil, err
	}
	spec, err := testbed.ReadManagerSpec(ctx, cs, releaseNamespace, releaseName, "manager")
	if err != nil {
		return nil, err
	}
	res.managerSA = spec.Namespace + "/" + spec.ServiceAccount
	logf("steady: counting writes over %s with nothing happening", o.quiet)
	quietFrom := time.Now()
	before, mBefore, err := writeCounts(ctx, e)
	if err != nil {
		return nil, err
	}
	time.Sleep(o.quiet)
	after, mAfter, err := writeCounts(ctx, e)
	if err != nil {
		return nil, err
	}
	quietTo := time.Now()
	res.quiet, res.managerQuiet = deltas(before, after), deltasF(mBefore, mAfter)
	logf("steady: quiet window: %v, manager %v", res.quiet, res.managerQuiet)

	logf("steady: restart, then every SecretSync re-enqueued")
	resyncFrom := time.Now()
	if res.resync, res.managerResync, err = resyncWritesByOp(ctx, e); err != nil {
		return nil, err
	}
	resyncTo := time.Now()
	// The log backend writes each event as the request completes; a moment for the file.
	time.Sleep(time.Second)
	log, err := e.cluster.AuditLog(ctx)
	if err != nil {
		return nil, err
	}
	split := func(from, to time.Time) (counted, excluded []auditWrite, err error) {
		ws, err := parseAuditWrites(log, from, to)
		for _, w := range ws {
			// With the amplification benchmark in the same run, the log also holds the
			// manager's reads.
			if !mutating(w.Verb) {
				continue
			}
			if benchTokenRequest(w, res.benchUser, res.managerSA) {
				excluded = append(excluded, w)
			} else {
				counted = append(counted, w)
			}
		}
		return counted, excluded, err
	}
	if res.quietAudit, res.quietExcluded, err = split(quietFrom, quietTo); err != nil {
		return nil, err
	}
	if res.resyncAudit, res.resyncExcluded, err = split(resyncFrom, resyncTo); err != nil {
		return nil, err
	}
	logf("steady: audit, quiet window: %v (left out: %v); restart window: %v (left out: %v)",
		writers(res.quietAudit), writers(res.quietExcluded), writers(res.resyncAudit), writers(res.resyncExcluded))
	return res, nil
}

// auditCounts sums audited writes by the report's columns: a subresource counts with its
// resource (secretsyncs/status is a secretsyncs write), events of both API groups as events.
func auditCounts(ws []auditWrite) map[string]int {
	out := map[string]int{}
	for _, w := range ws {
		out[w.Resource]++
	}
	return out
}

// waitPullSecretListed waits until every target namespace's default ServiceAccount lists the
// pull secret.
func waitPullSecretListed(ctx context.Context, e *env, namespaces int) error {
	n := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		sas, err := e.cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=default"})
		if err != nil {
			return false, err
		}
		n = 0
		for _, sa := range sas.Items {
			if strings.HasPrefix(sa.Namespace, "bench-") && slices.Contains(sa.ImagePullSecrets, corev1.LocalObjectReference{Name: steadyPull}) {
				n++
			}
		}
		return n >= namespaces, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("%d of %d default ServiceAccounts list %s", n, namespaces, steadyPull)
	}
	return err
}

// writeCounts reads the API server's mutating requests by resource and the manager's own write
// counter by op.
func writeCounts(ctx context.Context, e *env) (map[string]int, map[string]float64, error) {
	api, err := apiserverWrites(ctx, e.cs)
	if err != nil {
		return nil, nil, err
	}
	metrics, err := testbed.HTTPGet(ctx, "http://"+e.manager.MetricsAddr+"/metrics")
	if err != nil {
		return nil, nil, err
	}
	byOp := map[string]float64{}
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "platform_operators_secretsync_writes_total{") {
			continue
		}
		op := ""
		if i := strings.Index(line, `op="`); i >= 0 {
			op, _, _ = strings.Cut(line[i+4:], `"`)
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		byOp[op] += v
	}
	return api, byOp, nil
}

// resyncWritesByOp is resyncWrites with the manager's counter by op (it starts at zero with the
// restarted manager).
func resyncWritesByOp(ctx context.Context, e *env) (map[string]int, map[string]float64, error) {
	before, err := apiserverWrites(ctx, e.cs)
	if err != nil {
		return nil, nil, err
	}
	e.stopManager()
	if err := e.startManager(ctx); err != nil {
		return nil, nil, err
	}
	time.Sleep(5 * time.Second)
	patch := []byte(`{"metadata":{"labels":{"bench.platform-operators.io/touched":"` + strconv.FormatInt(time.Now().Unix(), 10) + `"}}}`)
	if _, err := e.cs.CoreV1().Namespaces().Patch(ctx, nsName(0), "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		return nil, nil, err
	}
	time.Sleep(5 * time.Second)
	after, byOp, err := writeCounts(ctx, e)
	if err != nil {
		return nil, nil, err
	}
	return deltas(before, after), byOp, nil
}

func deltas(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for _, r := range writeResources {
		out[r] = after[r] - before[r]
	}
	return out
}

func deltasF(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// writeSteadyReport replaces the steady-state section of the markdown file.
func writeSteadyReport(path string, r *steadyResult, cmd string) error {
	sum := func(m map[string]float64) float64 {
		t := 0.0
		for _, v := range m {
			t += v
		}
		return t
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## SecretSync at steady state: ServiceAccounts and two SecretSyncs sharing a copy name\n\n")
	fmt.Fprintf(&b, "%s. Command: `%s`.\n\n", measuredAsChart(), cmd)
	fmt.Fprintf(&b, "%d target namespaces, each with its `default` ServiceAccount; two SecretSyncs (`%s`, `%s`) copy the same "+
		"`kubernetes.io/dockerconfigjson` Secret under the same name with `imagePullSecretFor: [default]`: the first holds every copy, "+
		"the second reports every target in conflict.\n\n", r.namespaces, steadyChart, steadyAdmin)
	fmt.Fprintf(&b, "| window | secrets | serviceaccounts | secretsyncs | events | manager's own writes (by op) | target | |\n|---|---|---|---|---|---|---|---|\n")
	row := func(what string, ws []auditWrite, mgr map[string]float64) {
		n := auditCounts(ws)
		ours := n["secrets"] + n["serviceaccounts"] + n["secretsyncs"] + int(sum(mgr))
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.0f %v | 0 | %s |\n", what, n["secrets"], n["serviceaccounts"], n["secretsyncs"], n["events"], sum(mgr), mgr, verdict(ours == 0))
	}
	row(fmt.Sprintf("%s with nothing happening", r.quietFor), r.quietAudit, r.managerQuiet)
	row("a restart, then every SecretSync re-enqueued (10 s)", r.resyncAudit, r.managerResync)
	list := func(ws []auditWrite) string {
		if len(ws) == 0 {
			return "none"
		}
		return strings.Join(writers(ws), ", ")
	}
	fmt.Fprintf(&b, "\nWrites are what the API server's audit log recorded (a Metadata-level policy on writes to secrets, "+
		"serviceaccounts and their subresources, secretsyncs and their subresources, events), by user, verb and resource:\n\n")
	fmt.Fprintf(&b, "- %s with nothing happening: %s.\n", r.quietFor, list(r.quietAudit))
	fmt.Fprintf(&b, "- the restart window: %s.\n", list(r.resyncAudit))
	fmt.Fprintf(&b, "- left out of both: %s. That is the bench's own TokenRequest (`%s` creating `serviceaccounts/token` for %s): "+
		"to start the manager as the chart's ServiceAccount, the bench asks for a token and writes the manager's kubeconfig with it "+
		"(testbed.RunAsChart). The API server counts it as a serviceaccounts write (`apiserver_request_total` resource "+
		"`serviceaccounts`, subresource `token`); it changes no ServiceAccount, and in a cluster the kubelet does it for the pod.\n\n",
		list(append(append([]auditWrite(nil), r.quietExcluded...), r.resyncExcluded...)), r.benchUser, r.managerSA)
	fmt.Fprintf(&b, "`apiserver_request_total` deltas for mutating verbs in the same windows, for comparison (a subresource "+
		"counts with its resource, except `serviceaccounts/token`): quiet %v, restart %v.\n\n", r.quiet, r.resync)
	fmt.Fprintf(&b, "Every write to secrets, serviceaccounts and secretsyncs in the windows counts against the target, whoever "+
		"made it, and so does the manager's own counter, `platform_operators_secretsync_writes_total` (op `serviceaccount` counts "+
		"imagePullSecrets patches). Two SecretSyncs that share a copy name must leave each other's imagePullSecrets "+
		"entry alone: one that removed the other's would patch the `default` ServiceAccount over and over.\n\n")
	return replaceSection(path, "secretsync-steady", b.String())
}
