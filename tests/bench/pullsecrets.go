package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// The pull-secret benchmark (-scenarios=pullsecrets): a SecretSync with imagePullSecretFor ["*"]
// over N namespaces × M ServiceAccounts. It measures the ServiceAccount writes against the number
// that needed the entry, the time to the last ServiceAccount listing it against a bare client
// doing the same writes (the floor), the writes at steady state (a quiet window, a restart), the
// latency of a ServiceAccount created later, and the removal when the SecretSync goes.

const (
	pullAllSync   = "bench-pull-all"
	pullAllSecret = "bench-pull-all"
	floorPull     = "floor-pull"
	// theirs is the entry every created ServiceAccount carries from its creator: it must stay.
	theirsEntry = "theirs"
	// The scenario's own namespaces and label, so that it runs before or after the others.
	pullSourceNS = "pull-source"
	pullLabel    = "bench.platform-operators.io/pull-tenant"
)

func pullNS(i int) string { return fmt.Sprintf("pull-%04d", i) }

// pullSecretsOptions are the -pull-* flags.
type pullSecretsOptions struct {
	namespaces, perNamespace, workers, samples int
	quiet                                      time.Duration
}

// pullOpts is registered with the other flags before main parses them; kept here so the
// scenario lives in its own file.
var pullOpts = func() *pullSecretsOptions {
	o := &pullSecretsOptions{}
	flag.IntVar(&o.namespaces, "pull-namespaces", 1000, "Target namespaces of the pull-secret benchmark (-scenarios=pullsecrets).")
	flag.IntVar(&o.perNamespace, "pull-serviceaccounts", 10, "ServiceAccounts per namespace in the pull-secret benchmark, default included.")
	flag.IntVar(&o.workers, "pull-floor-workers", 32, "Concurrent writers of the pull-secret benchmark's floor client.")
	flag.IntVar(&o.samples, "pull-samples", 10, "ServiceAccounts created later, timed until they list the pull secret.")
	flag.DurationVar(&o.quiet, "pull-quiet", 30*time.Second, "How long the pull-secret benchmark counts writes with nothing happening.")
	return o
}()

type pullSecretsResult struct {
	namespaces, serviceAccounts, needed int
	// floor and ours: from the first write (ours: the SecretSync's create) to the last
	// ServiceAccount seen listing the entry through a watch.
	floor, ours time.Duration
	// oursWrites is the manager's own counter (op serviceaccount); oursRequests the API
	// server's ServiceAccount write requests in the same window (a refused patch counts there).
	oursWrites                  float64
	oursRequests                int
	theirsLost                  int
	quietWrites, restartWrites  float64
	quietRequests, restartReqs  int
	later                       []time.Duration
	removal                     time.Duration
	removalWrites               float64
	removalRequests, stillThere int
}

// saWatch records, per ServiceAccount, when it was first seen listing each entry, and its last
// seen list.
type saWatch struct {
	mu    sync.Mutex
	first map[string]map[types.NamespacedName]time.Time // entry -> ServiceAccount -> first seen
	last  map[types.NamespacedName][]string
	stop  chan struct{}
}

func newSAWatch(ctx context.Context, cs kubernetes.Interface) (*saWatch, error) {
	w := &saWatch{first: map[string]map[types.NamespacedName]time.Time{}, last: map[types.NamespacedName][]string{}, stop: make(chan struct{})}
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Core().V1().ServiceAccounts().Informer()
	record := func(obj any) {
		sa, ok := obj.(*corev1.ServiceAccount)
		if !ok || !benchTarget(sa.Namespace) {
			return
		}
		now := time.Now()
		key := types.NamespacedName{Namespace: sa.Namespace, Name: sa.Name}
		names := make([]string, 0, len(sa.ImagePullSecrets))
		for _, r := range sa.ImagePullSecrets {
			names = append(names, r.Name)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.last[key] = names
		for _, n := range names {
			if w.first[n] == nil {
				w.first[n] = map[types.NamespacedName]time.Time{}
			}
			if _, ok := w.first[n][key]; !ok {
				w.first[n][key] = now
			}
		}
	}
	if err := runRecording(ctx, inf, w.stop, record); err != nil {
		return nil, fmt.Errorf("ServiceAccount watch: %w", err)
	}
	return w, nil
}

func (w *saWatch) close() { close(w.stop) }

// benchTarget reports whether ns is one of the target namespaces (pull-0000, ...).
func benchTarget(ns string) bool {
	return strings.HasPrefix(ns, "pull-") && ns != pullSourceNS
}

// listing counts the ServiceAccounts whose last seen list holds entry, and those of all.
func (w *saWatch) listing(entry string) (with, all int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, names := range w.last {
		if slices.Contains(names, entry) {
			with++
		}
	}
	return with, len(w.last)
}

// waitListing waits until n ServiceAccounts list entry and returns when the last was first seen.
func (w *saWatch) waitListing(ctx context.Context, entry string, n int, timeout time.Duration) (time.Time, error) {
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		with, _ := w.listing(entry)
		return with >= n, nil
	}); err != nil {
		with, all := w.listing(entry)
		return time.Time{}, fmt.Errorf("%d of %d ServiceAccounts (%d seen) list %s after %s", with, n, all, entry, timeout)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for key, t := range w.first[entry] {
		if slices.Contains(w.last[key], entry) && t.After(last) {
			last = t
		}
	}
	return last, nil
}

// waitNone waits until no ServiceAccount lists entry and returns when that was seen.
func (w *saWatch) waitNone(ctx context.Context, entry string, timeout time.Duration) (time.Time, error) {
	var at time.Time
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		with, _ := w.listing(entry)
		at = time.Now()
		return with == 0, nil
	}); err != nil {
		with, _ := w.listing(entry)
		return time.Time{}, fmt.Errorf("%d ServiceAccounts still list %s after %s", with, entry, timeout)
	}
	return at, nil
}

// firstSeen is when the ServiceAccount was first seen listing entry (zero: not yet).
func (w *saWatch) firstSeen(key types.NamespacedName, entry string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first[entry][key]
}

func runPullSecrets(ctx context.Context, e *env, o pullSecretsOptions) (*pullSecretsResult, error) {
	cs := e.cs
	res := &pullSecretsResult{namespaces: o.namespaces, serviceAccounts: o.namespaces * o.perNamespace}
	logf("pullsecrets: %d namespaces × %d ServiceAccounts (reused when they exist)", o.namespaces, o.perNamespace)
	for _, ns := range []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: pullSourceNS}}} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	if err := parallel(ctx, o.namespaces, 64, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pullNS(i), Labels: map[string]string{pullLabel: "true"}}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return nil, err
	}
	// The ServiceAccounts besides default, each with an entry of its creator's.
	extra := o.perNamespace - 1
	if err := parallel(ctx, o.namespaces*extra, 64, func(ctx context.Context, i int) error {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: pullNS(i / extra), Name: fmt.Sprintf("app-%02d", i%extra)},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: theirsEntry}}}
		_, err := cs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return nil, err
	}
	w, err := newSAWatch(ctx, cs)
	if err != nil {
		return nil, err
	}
	defer w.close()
	// kube-controller-manager makes each namespace's default ServiceAccount (20 writes a second):
	// wait for all of them, and a few quiet seconds, before anything is timed.
	all := 0
	if err := wait.PollUntilContextTimeout(ctx, time.Second, max(2*time.Minute, time.Duration(o.namespaces)*time.Second/10), true, func(context.Context) (bool, error) {
		var with int
		with, all = w.listing(pullAllSecret)
		if with > 0 {
			return false, fmt.Errorf("pullsecrets: %d ServiceAccounts already list %s (a fresh cluster is needed)", with, pullAllSecret)
		}
		return all >= res.serviceAccounts, nil
	}); err != nil {
		if wait.Interrupted(err) && ctx.Err() == nil {
			return nil, fmt.Errorf("pullsecrets: %d of %d ServiceAccounts after waiting for the default ones", all, res.serviceAccounts)
		}
		return nil, err
	}
	time.Sleep(5 * time.Second)
	var keys []types.NamespacedName
	var lists [][]string
	w.mu.Lock()
	for k, l := range w.last {
		keys, lists = append(keys, k), append(lists, slices.Clone(l))
	}
	w.mu.Unlock()
	res.needed = len(keys)

	// The floor: a bare client creates the pull secret in each namespace and lists it on each
	// ServiceAccount with one request (a merge patch of the whole list, which it knows: no read),
	// as many writers as the manager has; then puts every list back, untimed.
	src := &corev1.Secret{Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"harbor.example.com":{"auth":"Ym9vdDpib290"}}}`)}}
	listPatch := func(names []string) []byte {
		if len(names) == 0 {
			return []byte(`{"imagePullSecrets":null}`)
		}
		refs := make([]string, len(names))
		for i, n := range names {
			refs[i] = fmt.Sprintf(`{"name":%q}`, n)
		}
		return []byte(`{"imagePullSecrets":[` + strings.Join(refs, ",") + `]}`)
	}
	logf("pullsecrets: floor, %d Secrets and %d ServiceAccount patches, %d writers", o.namespaces, len(keys), o.workers)
	t0 := time.Now()
	if err := parallel(ctx, o.namespaces, o.workers, func(ctx context.Context, i int) error {
		s := src.DeepCopy()
		s.Namespace, s.Name = pullNS(i), floorPull
		_, err := cs.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	if err := parallel(ctx, len(keys), o.workers, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().ServiceAccounts(keys[i].Namespace).Patch(ctx, keys[i].Name, types.MergePatchType, listPatch(append(slices.Clone(lists[i]), floorPull)), metav1.PatchOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	last, err := w.waitListing(ctx, floorPull, len(keys), 5*time.Minute)
	if err != nil {
		return nil, err
	}
	res.floor = last.Sub(t0)
	logf("pullsecrets: floor %s; putting the lists back", ms(res.floor))
	if err := parallel(ctx, len(keys), o.workers, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().ServiceAccounts(keys[i].Namespace).Patch(ctx, keys[i].Name, types.MergePatchType, listPatch(lists[i]), metav1.PatchOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	if err := parallel(ctx, o.namespaces, o.workers, func(ctx context.Context, i int) error {
		return cs.CoreV1().Secrets(pullNS(i)).Delete(ctx, floorPull, metav1.DeleteOptions{})
	}); err != nil {
		return nil, err
	}
	if _, err := w.waitNone(ctx, floorPull, 5*time.Minute); err != nil {
		return nil, err
	}
	time.Sleep(5 * time.Second)

	// Ours: the SecretSync with ["*"], its source there first.
	s := src.DeepCopy()
	s.Namespace, s.Name = pullSourceNS, pullAllSecret
	if _, err := cs.CoreV1().Secrets(pullSourceNS).Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(e.admin)
	if err != nil {
		return nil, err
	}
	before, mBefore, err := writeCounts(ctx, e)
	if err != nil {
		return nil, err
	}
	logf("pullsecrets: the manager, SecretSync %s with imagePullSecretFor [\"*\"]", pullAllSync)
	t0 = time.Now()
	if err := createPullAllSync(ctx, dyn); err != nil {
		return nil, err
	}
	if last, err = w.waitListing(ctx, pullAllSecret, len(keys), 10*time.Minute); err != nil {
		return nil, err
	}
	res.ours = last.Sub(t0)
	time.Sleep(5 * time.Second) // the last writes' counters, and any write that should not come
	after, mAfter, err := writeCounts(ctx, e)
	if err != nil {
		return nil, err
	}
	res.oursWrites, res.oursRequests = mAfter["serviceaccount"]-mBefore["serviceaccount"], after["serviceaccounts"]-before["serviceaccounts"]
	w.mu.Lock()
	for i, k := range keys {
		if slices.Contains(lists[i], theirsEntry) && !slices.Contains(w.last[k], theirsEntry) {
			res.theirsLost++
		}
	}
	w.mu.Unlock()
	logf("pullsecrets: ours %s (floor %s), %v ServiceAccount writes (%d requests) for %d that needed the entry; entries of others lost: %d",
		ms(res.ours), ms(res.floor), res.oursWrites, res.oursRequests, res.needed, res.theirsLost)

	logf("pullsecrets: counting writes over %s with nothing happening", o.quiet)
	before, mBefore = after, mAfter
	time.Sleep(o.quiet)
	if after, mAfter, err = writeCounts(ctx, e); err != nil {
		return nil, err
	}
	res.quietWrites, res.quietRequests = mAfter["serviceaccount"]-mBefore["serviceaccount"], after["serviceaccounts"]-before["serviceaccounts"]
	logf("pullsecrets: a restart, then every SecretSync re-enqueued")
	if before, err = apiserverWrites(ctx, cs); err != nil {
		return nil, err
	}
	e.stopManager()
	if err := e.startManager(ctx); err != nil {
		return nil, err
	}
	time.Sleep(5 * time.Second)
	// A namespace's label change enqueues every SecretSync (its whole pass too).
	touch := []byte(`{"metadata":{"labels":{"bench.platform-operators.io/touched":"` + time.Now().Format("150405") + `"}}}`)
	if _, err := cs.CoreV1().Namespaces().Patch(ctx, pullNS(0), types.MergePatchType, touch, metav1.PatchOptions{}); err != nil {
		return nil, err
	}
	time.Sleep(5 * time.Second)
	// The restarted manager's counter starts at zero.
	if after, mAfter, err = writeCounts(ctx, e); err != nil {
		return nil, err
	}
	res.restartWrites, res.restartReqs = mAfter["serviceaccount"], after["serviceaccounts"]-before["serviceaccounts"]
	logf("pullsecrets: writes with nothing to do: quiet %v (%d requests), restart %v (%d requests)", res.quietWrites, res.quietRequests, res.restartWrites, res.restartReqs)

	logf("pullsecrets: %d ServiceAccounts created later", o.samples)
	for i := 0; i < o.samples; i++ {
		key := types.NamespacedName{Namespace: pullNS(i * max(1, o.namespaces/max(1, o.samples))), Name: fmt.Sprintf("later-%02d", i)}
		t0 := time.Now()
		if _, err := cs.CoreV1().ServiceAccounts(key.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		if err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return !w.firstSeen(key, pullAllSecret).IsZero(), nil
		}); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("ServiceAccount %s created later never listed %s", key, pullAllSecret)
		}
		res.later = append(res.later, w.firstSeen(key, pullAllSecret).Sub(t0))
	}

	logf("pullsecrets: deleting the SecretSync: every entry of ours goes")
	time.Sleep(2 * time.Second)
	if before, mBefore, err = writeCounts(ctx, e); err != nil {
		return nil, err
	}
	t0 = time.Now()
	if err := dyn.Resource(secretSyncGVR).Delete(ctx, pullAllSync, metav1.DeleteOptions{}); err != nil {
		return nil, err
	}
	gone, err := w.waitNone(ctx, pullAllSecret, 10*time.Minute)
	if err != nil {
		return nil, err
	}
	res.removal = gone.Sub(t0)
	time.Sleep(5 * time.Second)
	if after, mAfter, err = writeCounts(ctx, e); err != nil {
		return nil, err
	}
	res.removalWrites, res.removalRequests = mAfter["serviceaccount"]-mBefore["serviceaccount"], after["serviceaccounts"]-before["serviceaccounts"]
	w.mu.Lock()
	for i, k := range keys {
		if slices.Contains(lists[i], theirsEntry) && !slices.Contains(w.last[k], theirsEntry) {
			res.stillThere++ // counted as lost below
		}
	}
	w.mu.Unlock()
	logf("pullsecrets: removal %s, %v writes (%d requests); entries of others lost: %d", ms(res.removal), res.removalWrites, res.removalRequests, res.stillThere)
	return res, nil
}

func createPullAllSync(ctx context.Context, dyn dynamic.Interface) error {
	ss := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ops.platform-operators.io/v1alpha1", "kind": "SecretSync",
		"metadata": map[string]any{"name": pullAllSync},
		"spec": map[string]any{
			"source":             map[string]any{"namespace": pullSourceNS, "name": pullAllSecret},
			"target":             map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{pullLabel: "true"}}},
			"imagePullSecretFor": []any{"*"},
		},
	}}
	_, err := dyn.Resource(secretSyncGVR).Create(ctx, ss, metav1.CreateOptions{})
	return err
}

// writePullSecretsReport replaces the pull-secret section of the markdown file.
func writePullSecretsReport(path string, r *pullSecretsResult, o pullSecretsOptions, cmd string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## SecretSync: a pull secret on every ServiceAccount (`imagePullSecretFor: [\"*\"]`)\n\n")
	fmt.Fprintf(&b, "%s. Command: `%s`.\n\n", measuredAsChart(), cmd)
	fmt.Fprintf(&b, "%d target namespaces × %d ServiceAccounts (`default` and %d more, each of those with an entry of its creator's, `%s`): "+
		"%d ServiceAccounts, all needing the entry. The floor is a bare client with %d writers that creates the pull secret in each "+
		"namespace and lists it on each ServiceAccount with one merge patch of the whole list (it knows the list: no read); the manager "+
		"reads each ServiceAccount from the API before its patch (its cache keeps a bounded form) and keeps entries others added. Times "+
		"run to the last ServiceAccount seen listing the entry through a watch.\n\n",
		r.namespaces, o.perNamespace, o.perNamespace-1, theirsEntry, r.serviceAccounts, o.workers)
	fmt.Fprintf(&b, "The API server's count of ServiceAccount write requests includes patches refused on a conflict (a whole pass and "+
		"the pass of a namespace its new copy queued reaching the same ServiceAccount; the loser reads it again and finds it in step): "+
		"those are requests, not writes.\n\n")
	fmt.Fprintf(&b, "| measure | result | target | |\n|---|---|---|---|\n")
	fmt.Fprintf(&b, "| ServiceAccount writes (manager's counter, op `serviceaccount`) / ServiceAccounts that needed the entry | %.0f / %d (API server: %d ServiceAccount write requests) | equal | %s |\n",
		r.oursWrites, r.needed, r.oursRequests, verdict(int(r.oursWrites) == r.needed))
	fmt.Fprintf(&b, "| time to the last ServiceAccount, ours / floor | %s / %s (%.1f×) | ≤ 3× floor | %s |\n",
		ms(r.ours), ms(r.floor), r.ours.Seconds()/max(r.floor.Seconds(), 0.001), verdict(r.ours <= 3*r.floor))
	fmt.Fprintf(&b, "| entries of others (`%s`) lost | %d while adding, %d while removing | 0 | %s |\n", theirsEntry, r.theirsLost, r.stillThere, verdict(r.theirsLost == 0 && r.stillThere == 0))
	fmt.Fprintf(&b, "| ServiceAccount writes over %s with nothing happening | %.0f (API server: %d requests) | 0 | %s |\n", o.quiet, r.quietWrites, r.quietRequests, verdict(r.quietWrites == 0 && r.quietRequests == 0))
	fmt.Fprintf(&b, "| ServiceAccount writes over a restart, then every SecretSync re-enqueued (10 s) | %.0f (API server: %d requests) | 0 | %s |\n", r.restartWrites, r.restartReqs, verdict(r.restartWrites == 0 && r.restartReqs == 0))
	fmt.Fprintf(&b, "| a ServiceAccount created later lists the entry after (%d samples) | p50 %s, max %s | | |\n", len(r.later), ms(percentile(r.later, 0.5)), ms(slices.Max(append(r.later, 0))))
	fmt.Fprintf(&b, "| SecretSync deleted: every entry of ours gone after | %s, %.0f writes (API server: %d requests) for %d ServiceAccounts | writes = ServiceAccounts | %s |\n\n",
		ms(r.removal), r.removalWrites, r.removalRequests, r.serviceAccounts+len(r.later), verdict(int(r.removalWrites) == r.serviceAccounts+len(r.later)))
	return replaceSection(path, "secretsync-pullsecrets", b.String())
}
