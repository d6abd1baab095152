package copyplan

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// NotATarget says, in the spec's words, why ns gets no copies of ss, or "" when it is a target.
// propagation.Exclude decides, as it does for the reconciler (propagation.Targets).
func NotATarget(ss *v1alpha1.SecretSync, ns *corev1.Namespace) string {
	tgt := ss.Spec.Target
	var sel labels.Selector
	if tgt.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(tgt.NamespaceSelector)
		if err != nil {
			return "spec.target.namespaceSelector is invalid: " + err.Error()
		}
		sel = s
	}
	switch propagation.Exclude(ns, sel, tgt.IncludeNamespaces, tgt.ExcludeNamespaces, ss.Spec.Source.Namespace) {
	case propagation.ExcludedSource:
		return "it is the source namespace, which never gets copies"
	case propagation.ExcludedTerminating:
		return "the namespace is being deleted (Terminating): no copies go into it"
	case propagation.ExcludedByName:
		return fmt.Sprintf("spec.target.excludeNamespaces excludes it (%s)", strings.Join(matching(tgt.ExcludeNamespaces, ns.Name), ", "))
	case propagation.ExcludedNotIncluded:
		return fmt.Sprintf("spec.target.includeNamespaces does not include it (%s)", strings.Join(tgt.IncludeNamespaces, ", "))
	case propagation.ExcludedBySelector:
		return fmt.Sprintf("namespace excluded by selector: spec.target.namespaceSelector %q does not match its labels {%s}", sel.String(), labels.Set(ns.Labels).String())
	}
	return ""
}

// matching are the patterns that match name.
func matching(patterns []string, name string) []string {
	var out []string
	for _, p := range patterns {
		if propagation.MatchesAny([]string{p}, name) {
			out = append(out, p)
		}
	}
	return out
}
