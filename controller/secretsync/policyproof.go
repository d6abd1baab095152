package secretsync

import (
	"context"
	"slices"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
// narrowing it, no paramRef). What the policy's expressions say is the chart's: an admin who
// edits them is trusted, as with everything else the chart installs.
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
	now := time.Now()
	if p.Clock != nil {
		now = p.Clock.Now()
	}
	recheck := p.Recheck
	if recheck <= 0 {
		recheck = DefaultPolicyRecheck
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && now.Sub(p.at) < recheck {
		return p.inForce
	}
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	key := types.NamespacedName{Name: p.Policy}
	var inForce bool
	if err := p.Reader.Get(ctx, key, vap); err == nil {
		if err := p.Reader.Get(ctx, key, binding); err == nil {
			inForce = policyInForce(vap, binding)
		}
	}
	if inForce != p.inForce || p.at.IsZero() {
		ctrl.LoggerFrom(ctx).Info("Ownership by label under the admission policy", "policy", p.Policy, "inForce", inForce)
	}
	p.at, p.inForce = now, inForce
	return inForce
}

// policyInForce decides, from the policy and its binding as read, whether the API server
// enforces the policy on every object (see PolicyProof).
func policyInForce(vap *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool {
	switch {
	case vap.DeletionTimestamp != nil || b.DeletionTimestamp != nil:
		return false
	case vap.Spec.FailurePolicy == nil || *vap.Spec.FailurePolicy != admissionregistrationv1.Fail:
		return false
	case vap.Spec.ParamKind != nil || b.Spec.ParamRef != nil:
		return false
	case b.Spec.PolicyName != vap.Name:
		return false
	case !slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny):
		return false
	case b.Spec.MatchResources != nil && (b.Spec.MatchResources.NamespaceSelector != nil && len(b.Spec.MatchResources.NamespaceSelector.MatchLabels)+len(b.Spec.MatchResources.NamespaceSelector.MatchExpressions) > 0 ||
		b.Spec.MatchResources.ObjectSelector != nil && len(b.Spec.MatchResources.ObjectSelector.MatchLabels)+len(b.Spec.MatchResources.ObjectSelector.MatchExpressions) > 0 ||
		len(b.Spec.MatchResources.ResourceRules) > 0 || len(b.Spec.MatchResources.ExcludeResourceRules) > 0):
		return false
	}
	return true
}
