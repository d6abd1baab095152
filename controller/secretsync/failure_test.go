package secretsync

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// Tests of issue 11: the controller under failure (concurrent workers, rejected writes,
// terminating namespaces).

// TestConflictsFoundByConcurrentWorkersAreAllReported interleaves the two kinds of conflict in
// one reconcile: targets held by another SecretSync's copy (seen in the plan) and targets held
// by a Secret nobody manages (seen by a worker when its create fails). Both are collected while
// the workers (8 in this suite) still run; under -race this fails when the collection is not
// synchronised.
func TestConflictsFoundByConcurrentWorkersAreAllReported(t *testing.T) {
	const c = "conflictrace"
	const n = 24
	first, second := c+"-first", c+"-second"
	srcFirst, srcSecond := namespace(t, c+"-src1", nil), namespace(t, c+"-src2", nil)
	var held, theirs []string
	for i := range n {
		// Even namespaces get the first SecretSync's copy; odd ones a Secret of their own.
		if i%2 == 0 {
			held = append(held, targetNamespace(t, fmt.Sprintf("%s-%02d", c, i), first))
		} else {
			ns := targetNamespace(t, fmt.Sprintf("%s-%02d", c, i), second)
			createSecret(t, makeSecret(ns, "creds"))
			theirs = append(theirs, ns)
		}
	}
	source := createSecret(t, makeSecret(srcFirst, "creds"))
	createSecret(t, makeSecret(srcSecond, "creds"))
	createSync(t, makeSync(first, srcFirst, first, sourceName("creds")))
	for _, ns := range held {
		copyIn(t, ns, source, first, v1alpha1.DeletionPolicyDelete)
	}
	waitReady(t, first, int32(len(held)))

	both := makeSync(second, srcSecond, second, sourceName("creds"))
	both.Spec.Target.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: caseLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{first, second}},
	}}
	createSync(t, both)
	eventually(t, "every target of "+second+" reported in conflict", func() error {
		ss := getSync(t, second)
		if err := statusIs(ss, metav1.ConditionFalse, "Conflict"); err != nil {
			return err
		}
		if ss.Status.Conflicts != n || ss.Status.Desired != n || ss.Status.Synced != 0 || ss.Status.Failed != 0 {
			return fmt.Errorf("status = %+v, want %d conflicts of %d desired, none synced or failed", ss.Status, n, n)
		}
		return nil
	})
}
