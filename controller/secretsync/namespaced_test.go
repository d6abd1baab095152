package secretsync

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
)

func TestNamespacedModeDecisions(t *testing.T) {
	managed := []string{"src", "team-a", "team-b"}
	spec := func(src string, include []string, sel *metav1.LabelSelector) *v1alpha1.SecretSync {
		return &v1alpha1.SecretSync{Spec: v1alpha1.SecretSyncSpec{
			Source: v1alpha1.SecretSyncSource{Namespace: src, Name: "s"},
			Target: v1alpha1.SecretSyncTarget{IncludeNamespaces: include, NamespaceSelector: sel},
		}}
	}
	cases := []struct {
		name          string
		ss            *v1alpha1.SecretSync
		wantReason    string // of the blocker; "" for none
		wantUnmanaged []string
	}{
		{name: "a listed source and every listed namespace is fine", ss: spec("src", nil, nil)},
		{name: "a source outside the list blocks", ss: spec("elsewhere", nil, nil), wantReason: copyplan.ReasonNamespaceNotManaged},
		{name: "a selector on the name label is decided from the list", ss: spec("src", nil, &metav1.LabelSelector{MatchLabels: map[string]string{nameLabel: "team-a"}})},
		{name: "a selector on another label blocks", ss: spec("src", nil, &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}), wantReason: copyplan.ReasonNamespaceSelectorUnsupported},
		{name: "an empty selector selects the list", ss: spec("src", nil, &metav1.LabelSelector{})},
		{name: "included names outside the list are reported, sorted and once", ss: spec("src", []string{"zeta", "team-a", "alpha", "zeta"}, nil), wantUnmanaged: []string{"alpha", "zeta"}},
		{name: "globs and the source namespace are never reported", ss: spec("src", []string{"team-*", "t?am", "src"}, nil)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sel labels.Selector
			if tc.ss.Spec.Target.NamespaceSelector != nil {
				s, err := metav1.LabelSelectorAsSelector(tc.ss.Spec.Target.NamespaceSelector)
				if err != nil {
					t.Fatal(err)
				}
				sel = s
			}
			b := namespacedBlocker(tc.ss, sel, managed)
			if got := ""; b != nil {
				got = b.reason
				if got != tc.wantReason {
					t.Errorf("blocker %q (%s), want %q", got, b.message, tc.wantReason)
				}
			} else if tc.wantReason != "" {
				t.Errorf("no blocker, want %q", tc.wantReason)
			}
			if got := unmanagedTargets(tc.ss, managed); !slices.Equal(got, tc.wantUnmanaged) {
				t.Errorf("unmanaged targets %v, want %v", got, tc.wantUnmanaged)
			}
		})
	}
}

func TestManagedNamespacesCarryTheirNameLabelOnly(t *testing.T) {
	nss := managedNamespaces([]string{"a", "b"}, "")
	if len(nss) != 2 || nss[0].Labels[nameLabel] != "a" || len(nss[1].Labels) != 1 {
		t.Fatalf("managedNamespaces = %v", nss)
	}
	if got := managedNamespaces([]string{"a", "b"}, "b"); len(got) != 1 || got[0].Name != "b" {
		t.Errorf("only b: %v", got)
	}
	if got := managedNamespaces([]string{"a", "b"}, "c"); len(got) != 0 {
		t.Errorf("only c, not listed: %v, want none", got)
	}
}

func TestMessagesNameAtMostFiveNamespaces(t *testing.T) {
	msg := unmanagedMessage([]string{"a", "b", "c", "d", "e", "f", "g"})
	if !strings.Contains(msg, "a, b, c, d, e and 2 more") || !strings.HasPrefix(msg, "spec.target.includeNamespaces names 7 namespaces") {
		t.Errorf("message %q", msg)
	}
}
