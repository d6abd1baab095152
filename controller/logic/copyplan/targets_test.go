package copyplan

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// TestNotATargetSaysWhatTargetsDecides: a namespace gets a reason exactly when
// propagation.Targets leaves it out, and the reason names the part of the spec that did.
func TestNotATargetSaysWhatTargetsDecides(t *testing.T) {
	spec := func(mod func(*v1alpha1.SecretSyncSpec)) *v1alpha1.SecretSync {
		ss := &v1alpha1.SecretSync{Spec: v1alpha1.SecretSyncSpec{
			Source: v1alpha1.SecretSyncSource{Namespace: "secretsync", Name: "harbor"},
			Target: v1alpha1.SecretSyncTarget{ExcludeNamespaces: []string{"kube-*"}, NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "yes"}}},
		}}
		if mod != nil {
			mod(&ss.Spec)
		}
		return ss
	}
	ns := func(name string, lbls map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	}
	tenant := map[string]string{"tenant": "yes"}
	terminating := ns("team-t", tenant)
	terminating.Status.Phase = corev1.NamespaceTerminating
	cases := []struct {
		name string
		ss   *v1alpha1.SecretSync
		ns   *corev1.Namespace
		want string // "" for a target
	}{
		{"a labelled namespace is a target", spec(nil), ns("team-a", tenant), ""},
		{"a namespace without the selector's label", spec(nil), ns("team-b", nil), "namespace excluded by selector"},
		{"a namespace an exclude glob names", spec(nil), ns("kube-team", tenant), "excludeNamespaces excludes it (kube-*)"},
		{"a namespace outside includeNamespaces", spec(func(s *v1alpha1.SecretSyncSpec) { s.Target.IncludeNamespaces = []string{"prod-*"} }), ns("team-a", tenant), "includeNamespaces does not include it (prod-*)"},
		{"the source namespace", spec(func(s *v1alpha1.SecretSyncSpec) { s.Target.NamespaceSelector = nil }), ns("secretsync", nil), "the source namespace"},
		{"a namespace being deleted", spec(nil), terminating, "being deleted"},
		{"an invalid selector", spec(func(s *v1alpha1.SecretSyncSpec) {
			s.Target.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tenant", Operator: "Bogus"}}}
		}), ns("team-a", tenant), "namespaceSelector is invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := NotATarget(tc.ss, tc.ns)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("NotATarget = %q, want %q", got, tc.want)
			}
			tgt := tc.ss.Spec.Target
			sel, err := metav1.LabelSelectorAsSelector(tgt.NamespaceSelector)
			if err != nil {
				return
			}
			if tgt.NamespaceSelector == nil {
				sel = labels.Everything()
			}
			isTarget := len(propagation.Targets([]*corev1.Namespace{tc.ns}, sel, tgt.IncludeNamespaces, tgt.ExcludeNamespaces, tc.ss.Spec.Source.Namespace)) == 1
			if isTarget != (got == "") {
				t.Errorf("Targets says target=%t, NotATarget %q", isTarget, got)
			}
		})
	}
}
