package secretsync

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
)

// serviceAccountWrites is the number of ServiceAccount patches the controller made for the
// SecretSync (the writes that went through; a patch refused on a conflict is not one).
func serviceAccountWrites(t *testing.T, ssName string) float64 {
	t.Helper()
	return sumMetric(t, metricsRegistry, "platform_operators_secretsync_writes_total", map[string]string{"secretsync": ssName, "op": "serviceaccount"})
}

// resyncWithoutChange wakes every whole pass and the passes of the namespaces given without
// changing anything the SecretSync reads: an annotation on the SecretSync (a whole pass) and a
// label on an unrelated namespace (every SecretSync's whole pass); then waits until the
// controller has run and is quiet again.
func resyncWithoutChange(t *testing.T, ssName string) {
	t.Helper()
	before := reconciles(t)
	eventually(t, "annotating the SecretSync", func() error {
		ss := getSync(t, ssName)
		if ss.Annotations == nil {
			ss.Annotations = map[string]string{}
		}
		ss.Annotations["note.example.com/touched"] = time.Now().Format(time.RFC3339Nano)
		return k8s.Update(ctx, ss)
	})
	setNamespaceLabel(t, namespace(t, ssName+"-unrelated", nil), "touched", "yes")
	settle(t, before)
	quiet(t)
}

// A SecretSync with imagePullSecretFor ["*"] lists its copy on every ServiceAccount of every
// target namespace, on those created later too, keeps the entries others put there, writes each
// ServiceAccount that needs the entry once and none on a pass that finds them in step, and
// removes its entries (only its own) when it stops selecting a ServiceAccount.
func TestImagePullSecretForStarListsTheCopyOnEveryServiceAccount(t *testing.T) {
	const c = "pullstar"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	outside := namespace(t, c+"-outside", nil)
	createSecret(t, makeSecret(src, "regcred", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))
	serviceAccount(t, a, "default", "theirs")
	serviceAccount(t, a, "builder")
	serviceAccount(t, b, "default")
	// Already lists the copy's name (someone else put it there): it needs no write, and the
	// entry is not claimed as ours.
	serviceAccount(t, b, "deployer", "regcred")
	notATarget := serviceAccount(t, outside, "default")

	createSync(t, makeSync(c, src, c, sourceName("regcred"), pullSecretFor(v1alpha1.AllServiceAccounts)))
	pullSecretsAre(t, a, "default", []string{"theirs", "regcred"}, "regcred")
	pullSecretsAre(t, a, "builder", []string{"regcred"}, "regcred")
	pullSecretsAre(t, b, "default", []string{"regcred"}, "regcred")
	waitReady(t, c, 2)
	quiet(t)
	pullSecretsAre(t, b, "deployer", []string{"regcred"}, "")
	if got := serviceAccountWrites(t, c); got != 3 {
		t.Errorf("%v ServiceAccount writes, want 3 (one per ServiceAccount that needed the entry)", got)
	}
	if sa := getServiceAccount(t, outside, "default"); sa.ResourceVersion != notATarget.ResourceVersion {
		t.Errorf("a ServiceAccount outside the targets was written: %v", pullSecretNames(sa))
	}

	t.Log("a ServiceAccount created later gets the entry, with one write")
	serviceAccount(t, b, "created-later", "theirs")
	pullSecretsAre(t, b, "created-later", []string{"theirs", "regcred"}, "regcred")
	quiet(t)
	if got := serviceAccountWrites(t, c); got != 4 {
		t.Errorf("%v ServiceAccount writes, want 4", got)
	}

	t.Log("a pass that finds every ServiceAccount in step writes nothing")
	sas := func() map[string]string {
		var objs []client.Object
		for _, k := range [][2]string{{a, "default"}, {a, "builder"}, {b, "default"}, {b, "deployer"}, {b, "created-later"}} {
			objs = append(objs, getServiceAccount(t, k[0], k[1]))
		}
		return rvs(objs...)
	}
	before, writesBefore := sas(), serviceAccountWrites(t, c)
	requestsA, requestsB := countWrites(t, a), countWrites(t, b)
	resyncWithoutChange(t, c)
	if diff := diffRVs(before, sas()); diff != "" {
		t.Errorf("ServiceAccounts written on a pass with nothing to do: %s", diff)
	}
	if got := serviceAccountWrites(t, c) - writesBefore; got != 0 {
		t.Errorf("%v ServiceAccount writes on a pass with nothing to do, want 0", got)
	}
	if n := requestsA.Load() + requestsB.Load(); n != 0 {
		t.Errorf("%d write requests to the target namespaces on a pass with nothing to do, want 0", n)
	}

	t.Log(`from "*" to a name: the others lose our entry, and keep theirs`)
	eventually(t, "narrowing imagePullSecretFor", func() error {
		ss := getSync(t, c)
		ss.Spec.ImagePullSecretFor = []string{"builder"}
		return k8s.Update(ctx, ss)
	})
	pullSecretsAre(t, a, "default", []string{"theirs"}, "")
	pullSecretsAre(t, b, "default", []string{}, "")
	pullSecretsAre(t, b, "created-later", []string{"theirs"}, "")
	pullSecretsAre(t, b, "deployer", []string{"regcred"}, "")
	pullSecretsAre(t, a, "builder", []string{"regcred"}, "regcred")

	t.Log(`back to "*", then the SecretSync deleted: every entry of ours goes, none of theirs`)
	eventually(t, "widening imagePullSecretFor", func() error {
		ss := getSync(t, c)
		ss.Spec.ImagePullSecretFor = []string{v1alpha1.AllServiceAccounts}
		return k8s.Update(ctx, ss)
	})
	pullSecretsAre(t, b, "created-later", []string{"theirs", "regcred"}, "regcred")
	if err := k8s.Delete(ctx, getSync(t, c)); err != nil {
		t.Fatal(err)
	}
	pullSecretsAre(t, a, "default", []string{"theirs"}, "")
	pullSecretsAre(t, a, "builder", []string{}, "")
	pullSecretsAre(t, b, "default", []string{}, "")
	pullSecretsAre(t, b, "created-later", []string{"theirs"}, "")
	pullSecretsAre(t, b, "deployer", []string{"regcred"}, "")
}

// A namespace with more ServiceAccounts than one pass writes there (serviceAccountWritesPerPass)
// is filled by its own passes, batch after batch: every ServiceAccount gets the entry with one
// write, a namespace beside it gets its copy and entry as well, and a pass after that writes none.
// A namespace that stops being a target loses every entry before its copy goes.
func TestImagePullSecretForStarFillsANamespaceOfManyServiceAccountsInBatches(t *testing.T) {
	const c = "pullmany"
	const n = 4*serviceAccountWritesPerPass + 5
	src := namespace(t, c+"-src", nil)
	big, small := targetNamespace(t, c+"-big", c), targetNamespace(t, c+"-small", c)
	createSecret(t, makeSecret(src, "regcred", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("sa-%03d", i)
		serviceAccount(t, big, names[i])
	}
	serviceAccount(t, small, "default")

	createSync(t, makeSync(c, src, c, sourceName("regcred"), pullSecretFor(v1alpha1.AllServiceAccounts)))
	pullSecretsAre(t, small, "default", []string{"regcred"}, "regcred")
	eventually(t, "every ServiceAccount of the big namespace lists the copy", func() error {
		missing := serviceAccountsWithout(t, big, "regcred")
		if len(missing) > 0 {
			return fmt.Errorf("%d without the entry, e.g. %s", len(missing), missing[0])
		}
		return nil
	})
	waitReady(t, c, 2)
	quiet(t)
	if got := serviceAccountWrites(t, c); got != n+1 {
		t.Errorf("%v ServiceAccount writes, want %d (one per ServiceAccount)", got, n+1)
	}
	writesBefore := serviceAccountWrites(t, c)
	resyncWithoutChange(t, c)
	if got := serviceAccountWrites(t, c) - writesBefore; got != 0 {
		t.Errorf("%v ServiceAccount writes on a pass with nothing to do, want 0", got)
	}

	t.Log("the big namespace stops being a target: every entry goes, then the copy")
	setNamespaceLabel(t, big, caseLabel, "")
	noSecret(t, big, "regcred")
	if missing := serviceAccountsWithout(t, big, "regcred"); len(missing) != n {
		t.Errorf("%d ServiceAccounts still list the copy after it went", n-len(missing))
	}
	pullSecretsAre(t, small, "default", []string{"regcred"}, "regcred")
}

// serviceAccountsWithout lists the ServiceAccounts of ns (from the API) that do not list name.
// whileProgressing waits until left() is 0, for as long as it keeps falling: n paced writes in
// batches take longer than one timeout on a loaded machine (CI runs its lanes side by side). It
// fails when a whole timeout passes without progress, so a controller that stops still fails.
func whileProgressing(t *testing.T, what string, left func() int) {
	t.Helper()
	for n, last, since := left(), -1, time.Now(); n > 0; n = left() {
		if last < 0 || n < last {
			last, since = n, time.Now()
		} else if time.Since(since) > timeout {
			t.Fatalf("%s: %d left, none done for %v", what, n, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func serviceAccountsWithout(t *testing.T, ns, name string) []string {
	t.Helper()
	list := &corev1.ServiceAccountList{}
	if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing ServiceAccounts: %v", err)
	}
	var out []string
	for _, sa := range list.Items {
		if !slices.Contains(pullSecretNames(&sa), name) {
			out = append(out, sa.Name)
		}
	}
	return out
}

// A tenant's ServiceAccount created later with 6,000 imagePullSecrets entries gets the copy
// under "*" like any other, loses none of its entries, and stays small in the manager's cache
// (trimServiceAccount): our entry and others up to maxOtherPullSecretBytes of names.
func TestAServiceAccountOfThousandsOfEntriesCreatedUnderAStarStaysBoundedInTheCache(t *testing.T) {
	const c = "pullstar-many"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	createSecret(t, makeSecret(src, "regcred", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))
	createSync(t, makeSync(c, src, c, sourceName("regcred"), pullSecretFor(v1alpha1.AllServiceAccounts)))
	waitReady(t, c, 1)

	theirs := make([]string, 6000)
	for i := range theirs {
		theirs[i] = fmt.Sprintf("theirs-%05d", i)
	}
	serviceAccount(t, a, "tenant-made", theirs...)
	pullSecretsAre(t, a, "tenant-made", append(slices.Clone(theirs), "regcred"), "regcred")

	cached := &corev1.ServiceAccount{}
	eventually(t, "the cache holds the ServiceAccount with our entry", func() error {
		if err := mgr.GetCache().Get(ctx, types.NamespacedName{Namespace: a, Name: "tenant-made"}, cached); err != nil {
			return err
		}
		if !slices.Contains(pullSecretNames(cached), "regcred") {
			return fmt.Errorf("cached entries %d, without ours", len(cached.ImagePullSecrets))
		}
		return nil
	})
	bytes := 0
	for _, e := range cached.ImagePullSecrets {
		if e.Name != "regcred" {
			bytes += len(e.Name)
		}
	}
	if bytes > maxOtherPullSecretBytes || len(cached.ImagePullSecrets) >= len(theirs) {
		t.Errorf("the cache keeps %d entries (%d bytes of others' names), want others within %d bytes", len(cached.ImagePullSecrets), bytes, maxOtherPullSecretBytes)
	}
	if cached.Annotations[keys.AnnotationPullSecrets] != "regcred" || len(cached.Labels) != 0 || len(cached.ManagedFields) != 0 {
		t.Errorf("the cached form holds more than it needs: annotations %v, labels %v, %d managedFields", cached.Annotations, cached.Labels, len(cached.ManagedFields))
	}
	if err := k8s.Delete(ctx, getSync(t, c)); err != nil {
		t.Fatal(err)
	}
	pullSecretsAre(t, a, "tenant-made", theirs, "")
}

// ServiceAccounts that list the copy's name themselves past the entries the cache keeps look, in
// the cache, as if they needed the entry; read from the API they do not. More of them in one
// namespace than a pass takes must not make the namespace's passes read the same ones for ever:
// each is read once per version (the accounts memory), the passes end, none is written, and a resync
// reads none again.
func TestServiceAccountsThatListTheCopyPastTheCacheDoNotKeepTheirNamespaceBusy(t *testing.T) {
	const c = "pullstar-hidden"
	const n = serviceAccountWritesPerPass + 6
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	createSecret(t, makeSecret(src, "regcred", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))
	// Past maxOtherPullSecretBytes of names, then the copy's name.
	var entries []string
	for i := 0; len(strings.Join(entries, "")) <= maxOtherPullSecretBytes; i++ {
		entries = append(entries, fmt.Sprintf("theirs-%05d", i))
	}
	entries = append(entries, "regcred")
	keys := make([]types.NamespacedName, n)
	rvBefore := map[string]string{}
	for i := range keys {
		sa := serviceAccount(t, a, fmt.Sprintf("hides-%03d", i), entries...)
		keys[i] = client.ObjectKeyFromObject(sa)
		rvBefore[sa.Name] = sa.ResourceVersion
	}
	createSync(t, makeSync(c, src, c, sourceName("regcred"), pullSecretFor(v1alpha1.AllServiceAccounts)))
	waitReady(t, c, 1)
	quiet(t) // fails on a pass that keeps requeueing itself
	gets := func() int {
		total := 0
		for _, k := range keys {
			total += apiGets.count(&corev1.ServiceAccount{}, k)
		}
		return total
	}
	read := gets()
	if read < n || read > 3*n {
		t.Errorf("%d reads of the %d ServiceAccounts, want each read about once", read, n)
	}
	resyncWithoutChange(t, c)
	if again := gets() - read; again != 0 {
		t.Errorf("%d reads of ServiceAccounts found in step at the same version, want 0", again)
	}
	for _, k := range keys {
		if sa := getServiceAccount(t, k.Namespace, k.Name); sa.ResourceVersion != rvBefore[k.Name] {
			t.Errorf("%s was written", k.Name)
		}
	}
	if got := serviceAccountWrites(t, c); got != 0 {
		t.Errorf("%v ServiceAccount writes, want 0", got)
	}
}

// One namespace's ServiceAccounts are written in batches of at most serviceAccountWritesPerPass
// with serviceAccountBatchPause between them, although our own writes keep raising events of that
// namespace's ServiceAccounts (which would queue the next batch at once); and a namespace created
// meanwhile gets its copy and entry while the big one is still being filled.
func TestOneNamespacesServiceAccountsAreWrittenInPacedBatchesAndOthersGoFirst(t *testing.T) {
	const c = "pullpaced"
	const n = 8 * serviceAccountWritesPerPass
	src := namespace(t, c+"-src", nil)
	big := targetNamespace(t, c+"-big", c)
	createSecret(t, makeSecret(src, "regcred", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))
	for i := range n {
		serviceAccount(t, big, fmt.Sprintf("sa-%03d", i))
	}
	patches := recordServiceAccountPatches(t, big)
	createSync(t, makeSync(c, src, c, sourceName("regcred"), pullSecretFor(v1alpha1.AllServiceAccounts)))
	eventually(t, "the first batch is written", func() error {
		if len(patches.times()) == 0 {
			return errors.New("no ServiceAccount patched yet")
		}
		return nil
	})
	small := targetNamespace(t, c+"-small", c)
	serviceAccount(t, small, "default")
	pullSecretsAre(t, small, "default", []string{"regcred"}, "regcred")
	if left := len(serviceAccountsWithout(t, big, "regcred")); left == 0 {
		t.Errorf("the big namespace was filled before a namespace created after its first batch got its entry")
	}
	whileProgressing(t, "every ServiceAccount of the big namespace lists the copy", func() int { return len(serviceAccountsWithout(t, big, "regcred")) })
	defer func() { // before createSync's cleanup waits for the copies: the entries go first, in batches too
		if err := k8s.Delete(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: c}}); err != nil {
			t.Error(err)
		}
		whileProgressing(t, "the entries leave the big namespace's ServiceAccounts", func() int { return n - len(serviceAccountsWithout(t, big, "regcred")) })
	}()
	quiet(t)
	at := patches.times()
	if len(at) != n {
		t.Errorf("%d ServiceAccount patches in the big namespace, want %d", len(at), n)
	}
	// A whole pass and the pass its new copy queued may write a batch each at the start: two
	// batches, then one per pause.
	const window = serviceAccountBatchPause * 4 / 5
	for i := range at {
		j := i
		for j < len(at) && at[j].Sub(at[i]) < window {
			j++
		}
		if j-i > 2*serviceAccountWritesPerPass {
			t.Fatalf("%d ServiceAccount patches within %s from the %d-th, want at most %d", j-i, window, i, 2*serviceAccountWritesPerPass)
		}
	}
	if took := at[len(at)-1].Sub(at[0]); took < (n/(2*serviceAccountWritesPerPass)-1)*serviceAccountBatchPause {
		t.Errorf("%d ServiceAccounts written in %s: faster than the batches allow", n, took)
	}
}
