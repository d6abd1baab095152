package propagation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/keys"
)

func TestConfigMapEnvelopeRoundTrip(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		cm   *corev1.ConfigMap
	}{
		{"empty", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"}}},
		{"data only", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", Labels: map[string]string{"l": "v"}},
			Data: map[string]string{"ca.crt": "PEM", "empty": ""}}},
		{"binary only, not valid UTF-8", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"},
			BinaryData: map[string][]byte{"blob": {0xff, 0x00, 0xfe}}}},
		{"both, immutable, with annotations", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", UID: "u", ResourceVersion: "7", Annotations: map[string]string{"x": "y"}},
			Data:       map[string]string{"text": "hello"}, BinaryData: map[string][]byte{"b1": {1}, "b2": []byte("valid utf-8 but binary")},
			Immutable: &yes}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := FromConfigMap(tc.cm)
			if env.Type != TypeConfigMap {
				t.Errorf("envelope type %q, want %q", env.Type, TypeConfigMap)
			}
			if d := cmp.Diff(tc.cm, ToConfigMap(env)); d != "" {
				t.Errorf("round trip (-in +out):\n%s", d)
			}
		})
	}
}

func TestFromConfigMapIgnoresABinaryKeysAnnotationFromTheAPI(t *testing.T) {
	// Someone set our envelope-only annotation on a real ConfigMap: it must not move its data
	// into binaryData on the copy.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", Annotations: map[string]string{keys.AnnotationBinaryKeys: "k"}},
		Data: map[string]string{"k": "v"}}
	out := ToConfigMap(FromConfigMap(cm))
	if out.Data["k"] != "v" || out.BinaryData != nil {
		t.Errorf("data %v binaryData %v, want k in data", out.Data, out.BinaryData)
	}
}

func TestAConfigMapCopyKeepsDataAndBinaryDataApart(t *testing.T) {
	src := FromConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: "src"},
		Data: map[string]string{"ca.crt": "PEM", "readme": "r"}, BinaryData: map[string][]byte{"ca.der": {0x30, 0x82}, "junk": {0}}})
	for _, tc := range []struct {
		name             string
		keys             Keys
		wantData         map[string]string
		wantBinary       map[string][]byte
		wantBinaryRecord string
	}{
		{"every key", Keys{}, map[string]string{"ca.crt": "PEM", "readme": "r"}, map[string][]byte{"ca.der": {0x30, 0x82}, "junk": {0}}, "ca.der,junk"},
		{"a binary key renamed stays binary", Keys{Include: []string{"ca.der"}, Rename: map[string]string{"ca.der": "root.der"}},
			nil, map[string][]byte{"root.der": {0x30, 0x82}}, "root.der"},
		{"a text key renamed onto a binary key's name is text", Keys{Exclude: []string{"junk"}, Rename: map[string]string{"readme": "ca.der"}},
			map[string]string{"ca.crt": "PEM", "ca.der": "r"}, nil, ""},
		{"no binary key left drops the record", Keys{Include: []string{"ca.crt"}}, map[string]string{"ca.crt": "PEM"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := Desired(src, "team-a", "bundle-sync")
			ApplyKeys(want, tc.keys)
			if got := want.Annotations[keys.AnnotationBinaryKeys]; got != tc.wantBinaryRecord {
				t.Errorf("binary record %q, want %q", got, tc.wantBinaryRecord)
			}
			cm := ToConfigMap(want)
			if d := cmp.Diff(tc.wantData, cm.Data); d != "" {
				t.Errorf("data (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantBinary, cm.BinaryData); d != "" {
				t.Errorf("binaryData (-want +got):\n%s", d)
			}
			if _, ok := cm.Annotations[keys.AnnotationBinaryKeys]; ok {
				t.Error("the envelope-only annotation reached the ConfigMap")
			}
		})
	}
}

func TestAConfigMapCopyIsInStepOnlyWhenDataAndBinaryDataMatch(t *testing.T) {
	src := FromConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "src"},
		Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": []byte("2")}})
	want := Desired(src, "team-a", "cfg-sync")
	live := func(mutate func(*corev1.ConfigMap)) *corev1.Secret {
		cm := ToConfigMap(want)
		cm.ResourceVersion = "9"
		mutate(cm)
		return FromConfigMap(cm)
	}
	if cur := live(func(*corev1.ConfigMap) {}); !InStep(cur, want) {
		t.Error("an exact copy is not in step")
	}
	if cur := live(func(cm *corev1.ConfigMap) { cm.Annotations["reloader"] = "x"; cm.Labels["argo"] = "y" }); !InStep(cur, want) {
		t.Error("others' metadata made the copy out of step")
	}
	// Same bytes under the same key, but in data instead of binaryData: a consumer sees a
	// different object (env from data only), so it is repaired.
	moved := live(func(cm *corev1.ConfigMap) { cm.Data["b"] = "2"; cm.BinaryData = nil })
	if InStep(moved, want) {
		t.Error("a key moved from binaryData to data is in step")
	}
	if NeedsReplace(moved, want) {
		t.Error("a mutable ConfigMap copy needs a replace")
	}
	fixed := ToConfigMap(Merged(moved, want))
	if fixed.Data["a"] != "1" || string(fixed.BinaryData["b"]) != "2" || len(fixed.Data) != 1 || fixed.ResourceVersion != "9" {
		t.Errorf("merged copy data %v binaryData %v rv %q", fixed.Data, fixed.BinaryData, fixed.ResourceVersion)
	}
	if changed := live(func(cm *corev1.ConfigMap) { cm.Data["a"] = "edited" }); InStep(changed, want) {
		t.Error("an edited value is in step")
	}
}
