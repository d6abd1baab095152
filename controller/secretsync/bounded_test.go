package secretsync

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/cachebounds"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// Each transform of this package's caches keeps a bounded few KiB of the largest object a
// tenant (or a source namespace's writer) may write, and is idempotent.
func TestEveryTransformKeepsABoundedForm(t *testing.T) {
	pulls := make([]corev1.LocalObjectReference, 6000)
	for i := range pulls {
		pulls[i].Name = fmt.Sprintf("tenant-pull-secret-%05d", i)
	}
	pulls = append(pulls, corev1.LocalObjectReference{Name: "harbor"})
	sa := &corev1.ServiceAccount{ObjectMeta: hostileMeta("tenant", 1), ImagePullSecrets: pulls}
	sa.Annotations[keys.AnnotationPullSecrets] = "harbor"
	for _, c := range []struct {
		name      string
		obj       any
		transform func(any) (any, error)
	}{
		{"a source Secret", hostileSecret(1), boundSource},
		{"a source ConfigMap", hostileConfigMap(1), boundSource},
		{"a ServiceAccount with 6,000 imagePullSecrets", sa, trimServiceAccount},
		{"a CopyRequest with 200 KiB of annotations", &v1alpha1.CopyRequest{ObjectMeta: hostileMeta("tenant", 1)}, boundSpecAndStatus},
		{"a SecretSync with 200 KiB of annotations", &v1alpha1.SecretSync{ObjectMeta: hostileMeta("", 1)}, boundSpecAndStatus},
	} {
		t.Run(c.name, func(t *testing.T) {
			once, err := c.transform(c.obj)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(once)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > cachebounds.MaxObjectBytes {
				t.Errorf("the cache keeps %d bytes, want at most %d", len(b), cachebounds.MaxObjectBytes)
			}
			twice, err := c.transform(once)
			if err != nil {
				t.Fatal(err)
			}
			if b2, _ := json.Marshal(twice); string(b2) != string(b) {
				t.Errorf("not idempotent:\n%s\n%s", b, b2)
			}
		})
	}
	t.Run("the ServiceAccount keeps the entries our annotation names", func(t *testing.T) {
		out, _ := trimServiceAccount(sa)
		if !slices.Contains(out.(*corev1.ServiceAccount).ImagePullSecrets, corev1.LocalObjectReference{Name: "harbor"}) {
			t.Error("the entry we added was dropped")
		}
	})
}

// A source keeps what matching needs: its name, type and labels (those within the bound); a
// source with more labels says it must be read whole before it is matched.
func TestBoundSourceKeepsWhatMatchingNeeds(t *testing.T) {
	small := &corev1.Secret{}
	small.Name, small.Namespace, small.ResourceVersion, small.UID = "pull", "source", "9", types.UID("u")
	small.Type = corev1.SecretTypeDockerConfigJson
	small.Labels = map[string]string{"team": "a"}
	small.Data = map[string][]byte{".dockerconfigjson": []byte("{}")}
	out, _ := boundSource(small)
	b := out.(*corev1.Secret)
	if !sourceBounded(b) || sourceLabelsUnknown(b) || b.Data != nil {
		t.Fatalf("bounded form %+v", b)
	}
	if !propagation.SourceMatches(b, "", labels.SelectorFromSet(labels.Set{"team": "a"}), corev1.SecretTypeDockerConfigJson) {
		t.Error("the bounded form no longer matches its selector and type")
	}
	big := hostileSecret(1)
	out, _ = boundSource(big)
	if b := out.(*corev1.Secret); !sourceLabelsUnknown(b) || len(b.Labels) != 0 {
		t.Errorf("labels over %d bytes were kept: %d", maxSourceLabelBytes, len(strings.Join(slices.Collect(func(yield func(string) bool) {
			for k := range b.Labels {
				if !yield(k) {
					return
				}
			}
		}), "")))
	}
}

// A source namespace's cache (each holds a bounded form of every Secret of the namespace) stops
// when no SecretSync names the namespace any more, and starts again when one does.
func TestASourceNamespacesCacheStopsWithItsLastSecretSync(t *testing.T) {
	src := namespace(t, "stopping-source", nil)
	tgt := targetNamespace(t, "stopping-target", "stopping")
	s := createSecret(t, makeSecret(src, "shared", withData(map[string][]byte{"k": []byte("v")})))
	createSync(t, makeSync("stopping", src, "stopping", sourceName("shared")))
	copyIn(t, tgt, s, "stopping", v1alpha1.DeletionPolicyDelete)
	if !slices.Contains(sources.Running(), src) {
		t.Fatalf("no cache runs for source namespace %s: %v", src, sources.Running())
	}
	if err := k8s.Delete(ctx, &v1alpha1.SecretSync{ObjectMeta: metav1.ObjectMeta{Name: "stopping"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the source cache stops", func() error {
		if slices.Contains(sources.Running(), src) {
			return fmt.Errorf("still running: %v", sources.Running())
		}
		return nil
	})
	createSync(t, makeSync("stopping-again", src, "stopping", sourceName("shared")))
	copyIn(t, tgt, s, "stopping-again", v1alpha1.DeletionPolicyDelete)
	if !slices.Contains(sources.Running(), src) {
		t.Fatalf("no cache runs for source namespace %s again: %v", src, sources.Running())
	}
}

// A source namespace's cache lists and watches through the manager's HTTP client and asks the
// manager's REST mapper: one of its own each would cost about 1 MiB of heap per source namespace
// (a mapper built from discovery, a client with its own connections), which the hostile
// scenario's heap profiles showed still held after the tenant's objects were gone.
func TestASourceNamespacesCacheSharesTheManagersClientAndMapper(t *testing.T) {
	src := namespace(t, "sharing-source", nil)
	tgt := targetNamespace(t, "sharing-target", "sharing")
	s := createSecret(t, makeSecret(src, "shared", withData(map[string][]byte{"k": []byte("v")})))
	mappings := sharedMapper.calls.Load()
	createSync(t, makeSync("sharing", src, "sharing", sourceName("shared")))
	copyIn(t, tgt, s, "sharing", v1alpha1.DeletionPolicyDelete)
	if !slices.Contains(sources.Running(), src) {
		t.Fatalf("no cache runs for source namespace %s: %v", src, sources.Running())
	}
	if n := sharedMapper.calls.Load() - mappings; n == 0 {
		t.Errorf("the source cache of %s asked the manager's REST mapper nothing: it built one of its own", src)
	}
	if path := "/api/v1/namespaces/" + src + "/secrets"; sharedTransport.requests(path) == 0 {
		t.Errorf("no request for %s went through the manager's HTTP client: the source cache built one of its own", path)
	}
}

// A ServiceAccount with 6,000 imagePullSecrets entries is cached with a few of them
// (trimServiceAccount), and what the manager adds and removes is computed against the whole list
// read from the API: none of the others is lost, none is listed twice, and an entry a user had
// listed under the copy's name (past what the cache keeps) is neither duplicated nor claimed.
func TestAServiceAccountWithThousandsOfEntriesLosesNoneAndGetsNoDuplicate(t *testing.T) {
	const c = "many-entries"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	source := createSecret(t, makeSecret(src, "regcred", withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))
	theirs := make([]string, 6000)
	for i := range theirs {
		theirs[i] = fmt.Sprintf("theirs-%05d", i)
	}
	withCopy := append(slices.Clone(theirs), "regcred")
	serviceAccount(t, a, "builder", theirs...)
	serviceAccount(t, b, "builder", withCopy...)

	ss := createSync(t, makeSync(c, src, c, sourceName("regcred"), pullSecretFor("builder")))
	copyIn(t, a, source, c, v1alpha1.DeletionPolicyDelete)
	copyIn(t, b, source, c, v1alpha1.DeletionPolicyDelete)
	pullSecretsAre(t, a, "builder", withCopy, "regcred")
	pullSecretsAre(t, b, "builder", withCopy, "")
	waitReady(t, c, 2)

	if err := k8s.Delete(ctx, ss); err != nil {
		t.Fatal(err)
	}
	pullSecretsAre(t, a, "builder", theirs, "")
	pullSecretsAre(t, b, "builder", withCopy, "")
}

// Running lists the source namespaces whose cache runs.
func (s *Sources) Running() []string {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.byNS))
	for ns := range s.byNS {
		out = append(out, ns)
	}
	return out
}
