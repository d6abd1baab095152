package secretsync

import (
	"context"
	"slices"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get

// DefaultPolicyRecheck is how long PolicyProof trusts what it last read of the policy.
const DefaultPolicyRecheck = time.Minute

// PolicyProof says whether the chart's ownership-keys ValidatingAdmissionPolicy is in force: the
// API server then refuses anyone but the manager who sets, changes or removes our labels and
// annotations, so a copy carrying our label and a proof annotation got both from the manager,
// even when the proof no longer verifies (the key was lost, or rotated out too early). Such a
// copy is proven (and re-signed at its next write) rather than stranded as a Conflict.
//
// In force means: the policy Policy exists with failurePolicy Fail, and its binding of the same
// name binds it (spec.policyName) with the action Deny, to every object (no matchResources
// narrowing it, no paramRef), and the policy's own matchConstraints reach every create and update
// of a Secret or ConfigMap with no selector or exclusion, with at most the chart's one match
// condition (which leaves the manager out). What the policy's expressions say is the chart's: an
// admin who edits them is trusted, as with everything else the chart installs. A label set while
// the policy was not in force is trusted once it is (docs/security.md: a known limit).
type PolicyProof struct {
	// Reader reads past the cache (the manager caches no policies).
	Reader client.Reader
	// Policy names the policy and its binding (the chart's <fullname>-ownership-keys).
	Policy string
	// Clock times the recheck; nil is the real clock.
	Clock clock.PassiveClock
	// Recheck is how long an answer is kept (zero: DefaultPolicyRecheck).
	Recheck time.Duration

	mu      sync.Mutex
	at      time.Time
	inForce bool
}

// InForce reports whether the policy is in force, read at most once per Recheck. A nil
// PolicyProof, or one that cannot read the policy, says no.
func (p *PolicyProof) InForce(ctx context.Context) bool {
	if p == nil || p.Policy == "" {
		return false
	}
	t := now(p.Clock)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && t.Sub(p.at) < orDefault(p.Recheck, DefaultPolicyRecheck) {
		return p.inForce
	}
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	key := types.NamespacedName{Name: p.Policy}
	inForce := p.Reader.Get(ctx, key, vap) == nil && p.Reader.Get(ctx, key, binding) == nil && policyInForce(vap, binding)
	if inForce != p.inForce || p.at.IsZero() {
		ctrl.LoggerFrom(ctx).Info("Ownership by label under the admission policy", "policy", p.Policy, "inForce", inForce)
	}
	p.at, p.inForce = t, inForce
	return inForce
}

// policyInForce decides, from the policy and its binding as read, whether the API server
// enforces the policy on every object (see PolicyProof).
func policyInForce(vap *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
	switch {
	case vap.DeletionTimestamp != nil || b.DeletionTimestamp != nil,
		vap.Spec.FailurePolicy == nil || *vap.Spec.FailurePolicy != admissionregistrationv1.Fail,
		vap.Spec.ParamKind != nil || b.Spec.ParamRef != nil,
		b.Spec.PolicyName != vap.Name,
		!slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny),
		b.Spec.MatchResources != nil && (!emptySelector(b.Spec.MatchResources.NamespaceSelector) || !emptySelector(b.Spec.MatchResources.ObjectSelector) ||
			len(b.Spec.MatchResources.ResourceRules) > 0 || len(b.Spec.MatchResources.ExcludeResourceRules) > 0),
		!matchesCopies(vap.Spec.MatchConstraints),
		// The chart's one match condition leaves the manager out; another could leave tenants out.
		len(vap.Spec.MatchConditions) > 1:
		return false
	}
	return true
}

// matchesCopies reports whether a policy's matchConstraints reach every create and update of a
// Secret or ConfigMap in every namespace: no selector or exclusion narrows them (the binding's
// are checked by policyInForce).
func matchesCopies(m *admissionregistrationv1.MatchResources) bool {
	if m == nil || len(m.ExcludeResourceRules) > 0 || !emptySelector(m.NamespaceSelector) || !emptySelector(m.ObjectSelector) {
		return false
	}
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, res := range []string{"secrets", "configmaps"} {
		for _, op := range []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update} {
			if !slices.ContainsFunc(m.ResourceRules, func(r admissionregistrationv1.NamedRuleWithOperations) bool {
				ops := slices.Contains(r.Operations, op) || slices.Contains(r.Operations, admissionregistrationv1.OperationAll)
				return len(r.ResourceNames) == 0 && has(r.APIGroups, "") && has(r.APIVersions, "v1") && has(r.Resources, res) && ops &&
					(r.Scope == nil || *r.Scope == admissionregistrationv1.AllScopes || *r.Scope == admissionregistrationv1.NamespacedScope)
			}) {
				return false
			}
		}
	}
	return true
}

func emptySelector(s *metav1.LabelSelector) bool {
	return s == nil || len(s.MatchLabels)+len(s.MatchExpressions) == 0
}
