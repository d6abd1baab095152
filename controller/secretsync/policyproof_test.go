package secretsync

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/keys"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// chartPolicy is an ownership-keys policy and binding as the chart installs them (the
// expressions do not matter to PolicyProof), changed by opts.
func chartPolicy(name string, opts ...func(*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding)) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets", "configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "true"}},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, o := range opts {
		o(vap, b)
	}
	return vap, b
}

func TestPolicyInForce(t *testing.T) {
	type vapT = admissionregistrationv1.ValidatingAdmissionPolicy
	type bT = admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, tc := range []struct {
		name string
		opt  func(*vapT, *bT)
		want bool
	}{
		{"the chart's policy and binding are in force", func(*vapT, *bT) {}, true},
		{"a binding that only warns is not", func(_ *vapT, b *bT) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}
		}, false},
		{"a policy that fails open is not", func(v *vapT, _ *bT) { v.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore) }, false},
		{"a binding of another policy is not", func(_ *vapT, b *bT) { b.Spec.PolicyName = "other" }, false},
		{"a binding narrowed to some namespaces is not", func(_ *vapT, b *bT) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}
		}, false},
		{"a binding narrowed to some objects is not", func(_ *vapT, b *bT) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}
		}, false},
		{"a binding with an empty matchResources is", func(_ *vapT, b *bT) { b.Spec.MatchResources = &admissionregistrationv1.MatchResources{} }, true},
		{"a policy being deleted is not", func(v *vapT, _ *bT) { now := metav1.Now(); v.DeletionTimestamp = &now }, false},
		{"a policy narrowed to some namespaces by its own matchConstraints is not", func(v *vapT, _ *bT) {
			v.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
		}, false},
		{"a policy that excludes some objects is not", func(v *vapT, _ *bT) {
			v.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
		}, false},
		{"a policy that matches no ConfigMaps is not", func(v *vapT, _ *bT) {
			v.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"secrets"}
		}, false},
		{"a policy that matches creates only is not", func(v *vapT, _ *bT) {
			v.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
		}, false},
		{"a policy with excluded resource rules is not", func(v *vapT, _ *bT) {
			v.Spec.MatchConstraints.ExcludeResourceRules = v.Spec.MatchConstraints.ResourceRules
		}, false},
		{"a policy with a second match condition is not", func(v *vapT, _ *bT) {
			v.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-the-manager", Expression: "true"}, {Name: "only-some", Expression: "request.namespace == 'x'"}}
		}, false},
		{"the chart's one match condition is", func(v *vapT, _ *bT) {
			v.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-the-manager", Expression: "!(request.userInfo.username in ['m'])"}}
		}, true},
		{"wildcards match", func(v *vapT, _ *bT) {
			v.Spec.MatchConstraints.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}
			v.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{"*"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vap, b := chartPolicy("p", tc.opt)
			if got := policyInForce(vap, b); got != tc.want {
				t.Errorf("policyInForce = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCopiesWithAStaleProofAreReSignedWhileThePolicyIsInForce is the key loss of issue 34: the
// key Secret deleted and the manager restarted with a new key, then the source updated. Every copy
// then carries our label and a proof of the lost key, and the old data. Without the chart's
// ownership-keys policy nothing tells them from a tenant's labelled Secrets: Conflict. With it in
// force, only the manager can have set that label and annotation: they follow the source and are
// re-signed.
func TestCopiesWithAStaleProofAreReSignedWhileThePolicyIsInForce(t *testing.T) {
	const c = "lostkey"
	src := namespace(t, c+"-src", nil)
	source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"token": []byte("rotated")})))
	lost := propagation.NewProver([]byte(strings.Repeat("l", 32)))
	owner := propagation.SecretSyncOwner(c)
	var targets []string
	for i := range 3 {
		ns := targetNamespace(t, fmt.Sprintf("%s-%d", c, i), c)
		targets = append(targets, ns)
		// The copy as the manager made it under the lost key, at the old data.
		old := propagation.Desired(makeSecret(src, "creds"), ns, c)
		old.Annotations[keys.AnnotationDeletionPolicy] = string(v1alpha1.DeletionPolicyDelete)
		lost.Prove(old, owner)
		createSecret(t, old)
	}
	createSync(t, makeSync(c, src, c, sourceName("creds")))
	ss := waitReason(t, c, copyplan.ReasonConflict)
	if ss.Status.Conflicts != 3 {
		t.Fatalf("status = %+v, want the 3 copies in conflict while no policy is in force", ss.Status)
	}

	vap, b := chartPolicy(testOwnershipPolicy)
	if err := k8s.Create(ctx, vap); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, vap) })
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, b) })
	for _, ns := range targets {
		before := getSecret(t, ns, "creds")
		got := copyIn(t, ns, source, c, v1alpha1.DeletionPolicyDelete) // isCopy checks the proof under the current key
		if got.UID != before.UID {
			t.Errorf("%s/creds was replaced, want an update (uid %s, was %s)", ns, got.UID, before.UID)
		}
	}
	waitReady(t, c, 3)
}
