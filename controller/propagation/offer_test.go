package propagation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/platform-operators/platform-operators/controller/keys"
)

func TestOffered(t *testing.T) {
	now := metav1.Now()
	offer := func(label, namespaces string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "harbor-pull", Namespace: "platform", Labels: map[string]string{}, Annotations: map[string]string{}}}
		if label != "" {
			s.Labels[keys.LabelOffer] = label
		}
		if namespaces != "" {
			s.Annotations[keys.AnnotationOfferNamespaces] = namespaces
		}
		return s
	}
	deleting := offer("true", "*")
	deleting.DeletionTimestamp = &now
	// A tenant who received a copy offers it on: the copy's label says what it is.
	syncCopy, requestCopy, emptyLabel := offer("true", "*"), offer("true", "*"), offer("true", "*")
	syncCopy.Labels[keys.LabelSecretSync] = "harbor"
	requestCopy.Labels[keys.LabelCopyRequest] = "pull"
	emptyLabel.Labels[keys.LabelSecretSync] = ""
	for _, tc := range []struct {
		name string
		src  *corev1.Secret
		ns   string
		want bool
	}{
		{"no source", nil, "team-a", false},
		{"named", offer("true", "team-a"), "team-a", true},
		{"one of a list, with spaces", offer("true", "billing, team-a ,ops"), "team-a", true},
		{"a glob", offer("true", "team-*"), "team-a", true},
		{"everyone", offer("true", "*"), "anything", true},
		{"not listed", offer("true", "team-*"), "billing", false},
		{"a prefix is not a match", offer("true", "team"), "team-a", false},
		{"the annotation without the label", offer("", "team-a"), "team-a", false},
		{"the label with another value", offer("yes", "team-a"), "team-a", false},
		{"the label without the annotation", offer("true", ""), "team-a", false},
		{"an empty list", offer("true", " , "), "team-a", false},
		{"a malformed glob matches only itself", offer("true", "team-[a"), "team-a", false},
		{"a source being deleted", deleting, "team-a", false},
		{"a SecretSync's copy, whatever offer it carries", syncCopy, "team-a", false},
		{"a CopyRequest's copy, whatever offer it carries", requestCopy, "team-a", false},
		{"an object with our copy label, even empty", emptyLabel, "team-a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Offered(tc.src, tc.ns); got != tc.want {
				t.Errorf("Offered = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRequestedCopies(t *testing.T) {
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "harbor-pull", Namespace: "platform", UID: "u",
		Labels:      map[string]string{keys.LabelOffer: "true", "team": "platform"},
		Annotations: map[string]string{keys.AnnotationOfferNamespaces: "team-*"}},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{".dockerconfigjson": []byte("{}")}}
	want := Requested(src, "team-a", "regcred", "pull")
	if want.Namespace != "team-a" || want.Name != "regcred" || want.Type != src.Type || string(want.Data[".dockerconfigjson"]) != "{}" {
		t.Errorf("copy %s/%s type %s data %v", want.Namespace, want.Name, want.Type, want.Data)
	}
	if want.Labels[keys.LabelCopyRequest] != "pull" || want.Labels[keys.LabelManagedBy] != keys.ManagedByValue {
		t.Errorf("labels %v", want.Labels)
	}
	for _, k := range []string{keys.LabelSecretSync, keys.LabelOffer, "team"} {
		if _, ok := want.Labels[k]; ok {
			t.Errorf("label %s travelled to the copy", k)
		}
	}
	if _, ok := want.Annotations[keys.AnnotationOfferNamespaces]; ok {
		t.Error("the offer travelled to the copy")
	}

	owner := Owner{Label: keys.LabelCopyRequest, Name: "pull", Kind: "CopyRequest"}
	key := types.NamespacedName{Namespace: "team-a", Name: "regcred"}
	other := want.DeepCopy()
	other.Labels[keys.LabelCopyRequest] = "another"
	pushed := want.DeepCopy()
	delete(pushed.Labels, keys.LabelCopyRequest)
	pushed.Labels[keys.LabelSecretSync] = "registry"
	stale := want.DeepCopy()
	stale.Name = "old-name"
	for _, tc := range []struct {
		name    string
		live    *corev1.Secret
		owned   []*corev1.Secret
		wantOps []Op
		message string
	}{
		{"absent: create", nil, nil, []Op{OpCreate}, ""},
		{"in step: nothing", want.DeepCopy(), []*corev1.Secret{want}, nil, ""},
		{"another CopyRequest's copy: conflict", other, nil, []Op{OpConflict}, `Secret team-a/regcred is managed by CopyRequest "another"`},
		{"a SecretSync's copy: conflict", pushed, nil, []Op{OpConflict}, `Secret team-a/regcred is managed by SecretSync "registry"`},
		{"the copy under an old name goes", nil, []*corev1.Secret{stale}, []Op{OpDelete, OpCreate}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ComputeFor(owner, []*corev1.Secret{want}, func(k types.NamespacedName) *corev1.Secret {
				if k == key {
					return tc.live
				}
				return nil
			}, tc.owned, PolicyDelete)
			var ops []Op
			for _, a := range p.Actions {
				ops = append(ops, a.Op)
				if a.Op == OpConflict && a.Message != tc.message {
					t.Errorf("message %q, want %q", a.Message, tc.message)
				}
			}
			if len(ops) != len(tc.wantOps) {
				t.Fatalf("ops %v, want %v", ops, tc.wantOps)
			}
			for i := range ops {
				if ops[i] != tc.wantOps[i] {
					t.Errorf("ops %v, want %v", ops, tc.wantOps)
				}
			}
		})
	}
}
