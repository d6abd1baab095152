package secretsync

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/logic/copyplan"
	"github.com/platform-operators/platform-operators/controller/propagation"
)

// The manager's own secrets never leave its namespace (issue 34): an admin's SecretSync over the
// manager's namespace with an empty selector copies its ordinary Secrets, never the ownership
// key, a Helm release, a ServiceAccount token or the manager's pull credential, and says so in its
// status.
func TestTheManagersOwnSecretsAreNeverCopied(t *testing.T) {
	const c = "withheld"
	target := targetNamespace(t, c+"-team-a", c)
	ca := createSecret(t, makeSecret(ownershipNS, c+"-ca"))
	release := createSecret(t, makeSecret(ownershipNS, "sh.helm.release.v1."+c+".v1", withType(propagation.TypeHelmRelease),
		withLabels(map[string]string{"owner": "helm", "name": c}), withData(map[string][]byte{"release": []byte("H4sI...pull password...")})))
	token := makeSecret(ownershipNS, c+"-manager-token", withType(corev1.SecretTypeServiceAccountToken))
	token.Annotations = map[string]string{corev1.ServiceAccountNameKey: "manager"}
	createSecret(t, token)
	createSecret(t, makeSecret(ownershipNS, managerPullSecret, withType(corev1.SecretTypeDockerConfigJson),
		withData(map[string][]byte{corev1.DockerConfigJsonKey: []byte(dockerConfig)})))

	createSync(t, makeSync(c, ownershipNS, c, func(ss *v1alpha1.SecretSync) { ss.Spec.Source.Selector = &metav1.LabelSelector{} }))
	copyIn(t, target, ca, c, v1alpha1.DeletionPolicyDelete)
	ss := waitReason(t, c, copyplan.ReasonSourceWithheld)
	msg := meta.FindStatusCondition(ss.Status.Conditions, copyplan.ConditionReady).Message
	// The message names the first few withheld sources by name and counts the rest: other tests'
	// ring keys (of the ownership-key type) share this namespace and are withheld too.
	for _, name := range []string{DefaultOwnershipKeySecret, release.Name, token.Name, managerPullSecret} {
		noSecret(t, target, name)
		if !strings.Contains(msg, ownershipNS+"/"+name) && !strings.Contains(msg, " more;") {
			t.Errorf("the status neither names %s nor counts more: %s", name, msg)
		}
	}
	var n int
	if _, err := fmt.Sscanf(msg, "%d sources", &n); err != nil || n < 4 {
		t.Errorf("the status counts %d withheld sources (%v), want at least the 4 of this test: %s", n, err, msg)
	}
	if len(warningEvents(t, c, copyplan.ReasonSourceWithheld)) == 0 {
		t.Errorf("no Warning Event %s", copyplan.ReasonSourceWithheld)
	}

	t.Log("named directly, the key is withheld too, and not reported as missing")
	const named = c + "-named"
	createSync(t, makeSync(named, ownershipNS, c, sourceName(DefaultOwnershipKeySecret)))
	ss = waitReason(t, named, copyplan.ReasonSourceWithheld)
	if !strings.Contains(meta.FindStatusCondition(ss.Status.Conditions, copyplan.ConditionReady).Message, "ownership key") {
		t.Errorf("message = %q", meta.FindStatusCondition(ss.Status.Conditions, copyplan.ConditionReady).Message)
	}
	noSecret(t, target, DefaultOwnershipKeySecret)
}

// A source owner's offer of a Helm release (or of the ownership key) is refused like no offer.
func TestAnOfferOfAWithheldSecretIsRefusedLikeNoOffer(t *testing.T) {
	const c = "withheld-offer"
	platform := namespace(t, c+"-platform", nil)
	tenant := namespace(t, c+"-team-a", nil)
	release := createSecret(t, makeSecret(platform, "sh.helm.release.v1.app.v1", withType(propagation.TypeHelmRelease)))
	offer(t, release, tenant)
	createRequest(t, k8s, makeRequest(tenant, "release", v1alpha1.CopyRequestSource{Namespace: platform, Name: release.Name}, ""))
	waitRequest(t, tenant, "release", metav1.ConditionFalse, copyplan.ReasonNotOffered)
	noSecret(t, tenant, release.Name)
}
