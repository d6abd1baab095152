package secretsync

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
)

func configMapSource(ss *v1alpha1.SecretSync) { ss.Spec.Source.Kind = v1alpha1.CopyKindConfigMap }

func getConfigMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}

// isConfigMapCopy checks that cm is the copy of src made by SecretSync ss: the same data and
// binaryData, each key where the source has it, our label and source annotation.
func isConfigMapCopy(cm, src *corev1.ConfigMap, ss string) error {
	if cm == nil {
		return errors.New("no copy")
	}
	if len(cm.Data) != len(src.Data) || len(cm.BinaryData) != len(src.BinaryData) {
		return fmt.Errorf("data %v binaryData %v, want data %v binaryData %v", cm.Data, cm.BinaryData, src.Data, src.BinaryData)
	}
	for k, v := range src.Data {
		if got, ok := cm.Data[k]; !ok || got != v {
			return fmt.Errorf("data[%q] = %q, want %q", k, got, v)
		}
	}
	for k, v := range src.BinaryData {
		if got, ok := cm.BinaryData[k]; !ok || !bytes.Equal(got, v) {
			return fmt.Errorf("binaryData[%q] = %q, want %q", k, got, v)
		}
	}
	if got := cm.Labels[keys.LabelSecretSync]; got != ss {
		return fmt.Errorf("label %s=%q, want %q", keys.LabelSecretSync, got, ss)
	}
	if got, want := cm.Annotations[keys.AnnotationSource], src.Namespace+"/"+src.Name; got != want {
		return fmt.Errorf("annotation %s=%q, want %q", keys.AnnotationSource, got, want)
	}
	if _, ok := cm.Annotations[keys.AnnotationBinaryKeys]; ok {
		return errors.New("the envelope-only binary-keys annotation reached the API")
	}
	return nil
}

func configMapCopyIn(t *testing.T, ns string, src *corev1.ConfigMap, ss string) *corev1.ConfigMap {
	t.Helper()
	var got *corev1.ConfigMap
	eventually(t, fmt.Sprintf("the copy of ConfigMap %s/%s in %s", src.Namespace, src.Name, ns), func() error {
		got = getConfigMap(t, ns, src.Name)
		return isConfigMapCopy(got, src, ss)
	})
	return got
}

func noConfigMap(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, fmt.Sprintf("no ConfigMap %s/%s", ns, name), func() error {
		if cm := getConfigMap(t, ns, name); cm != nil {
			return fmt.Errorf("exists with labels %v", cm.Labels)
		}
		return nil
	})
}

func updateConfigMap(t *testing.T, ns, name string, mutate func(*corev1.ConfigMap)) {
	t.Helper()
	eventually(t, "updating ConfigMap "+ns+"/"+name, func() error {
		cm := getConfigMap(t, ns, name)
		if cm == nil {
			return errors.New("not found")
		}
		mutate(cm)
		return k8s.Update(ctx, cm)
	})
}

// A ConfigMap source has the semantics of a Secret source: every target gets a copy, updates
// travel, edited and deleted copies are repaired, a new namespace gets its copy, a ConfigMap
// that is not ours is never touched, and copies go with the source and with the SecretSync.
func TestAConfigMapSourceIsCopiedAndKeptInStepLikeASecret(t *testing.T) {
	const c = "cm"
	src := namespace(t, c+"-src", nil)
	a, b := targetNamespace(t, c+"-a", c), targetNamespace(t, c+"-b", c)
	source := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "ca-bundle"},
		Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----"}, BinaryData: map[string][]byte{"ca.der": binary}}
	if err := k8s.Create(ctx, source); err != nil {
		t.Fatal(err)
	}
	// A Secret of the same name in the source namespace is not a ConfigMap source.
	createSecret(t, makeSecret(src, "ca-bundle"))
	createSync(t, makeSync(c, src, c, sourceName("ca-bundle"), configMapSource))
	t.Cleanup(func() {
		eventually(t, "the ConfigMap copies are cleaned up", func() error {
			list := &corev1.ConfigMapList{}
			if err := k8s.List(ctx, list, client.MatchingLabels{keys.LabelSecretSync: c}); err != nil {
				return err
			}
			if len(list.Items) > 0 {
				return fmt.Errorf("%d left", len(list.Items))
			}
			return nil
		})
	})
	configMapCopyIn(t, a, source, c)
	configMapCopyIn(t, b, source, c)
	waitReady(t, c, 2)
	if s := getSecret(t, a, "ca-bundle"); s != nil {
		t.Errorf("a Secret was copied by a ConfigMap SecretSync: %v", s.Labels)
	}

	t.Log("a source update reaches every copy")
	updateConfigMap(t, src, "ca-bundle", func(cm *corev1.ConfigMap) {
		cm.Data["ca.crt"] = "rotated"
		cm.Data["extra.pem"] = "more"
		cm.BinaryData = nil
	})
	source = getConfigMap(t, src, "ca-bundle")
	configMapCopyIn(t, a, source, c)
	configMapCopyIn(t, b, source, c)

	t.Log("an edited copy is repaired, others' labels on it stay")
	updateConfigMap(t, a, "ca-bundle", func(cm *corev1.ConfigMap) {
		cm.Data["ca.crt"] = "tampered"
		cm.Labels["team.example.com/owner"] = "payments"
	})
	got := configMapCopyIn(t, a, source, c)
	if got.Labels["team.example.com/owner"] != "payments" {
		t.Errorf("others' label was removed: %v", got.Labels)
	}

	t.Log("a deleted copy is recreated")
	if err := k8s.Delete(ctx, getConfigMap(t, b, "ca-bundle")); err != nil {
		t.Fatal(err)
	}
	configMapCopyIn(t, b, source, c)

	t.Log("a new namespace gets its copy; a ConfigMap that is not ours is kept and reported")
	d := namespace(t, c+"-d", nil)
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d, Name: "ca-bundle"}, Data: map[string]string{"mine": "yes"}}
	if err := k8s.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	e := targetNamespace(t, c+"-e", c)
	setNamespaceLabel(t, d, caseLabel, c)
	configMapCopyIn(t, e, source, c)
	ss := waitReason(t, c, "Conflict")
	if ss.Status.Conflicts != 1 || len(ss.Status.Failures) != 1 || ss.Status.Failures[0].Namespace != d {
		t.Errorf("status %+v, want one conflict in %s", ss.Status, d)
	} else if want := "ConfigMap " + d + "/ca-bundle exists and is not managed"; !bytes.Contains([]byte(ss.Status.Failures[0].Message), []byte(want)) {
		t.Errorf("conflict message %q, want it to say %q", ss.Status.Failures[0].Message, want)
	}
	if cm := getConfigMap(t, d, "ca-bundle"); cm.Data["mine"] != "yes" || cm.Labels[keys.LabelSecretSync] != "" {
		t.Errorf("their ConfigMap was written: %+v", cm)
	}

	t.Log("a deleted source takes its copies along; their ConfigMap stays")
	if err := k8s.Delete(ctx, getConfigMap(t, src, "ca-bundle")); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{a, b, e} {
		noConfigMap(t, ns, "ca-bundle")
	}
	waitReason(t, c, "SourceNotFound")
	if cm := getConfigMap(t, d, "ca-bundle"); cm == nil || cm.Data["mine"] != "yes" {
		t.Errorf("their ConfigMap was touched: %+v", cm)
	}
	if s := getSecret(t, src, "ca-bundle"); s == nil {
		t.Error("the Secret of the same name in the source namespace is gone")
	}
}

// Deleting a ConfigMap SecretSync cleans its copies up as a Secret one does: the cleanup does
// not know the kind (the object is gone) and looks at both.
func TestADeletedConfigMapSecretSyncTakesItsCopiesAlong(t *testing.T) {
	const c = "cmdel"
	src := namespace(t, c+"-src", nil)
	a := targetNamespace(t, c+"-a", c)
	source := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "settings"}, Data: map[string]string{"k": "v"}}
	if err := k8s.Create(ctx, source); err != nil {
		t.Fatal(err)
	}
	ss := makeSync(c, src, c, sourceName("settings"), configMapSource)
	if err := k8s.Create(ctx, ss); err != nil {
		t.Fatal(err)
	}
	configMapCopyIn(t, a, source, c)
	waitReady(t, c, 1)
	if err := k8s.Delete(ctx, ss); err != nil {
		t.Fatal(err)
	}
	noConfigMap(t, a, "settings")
}
