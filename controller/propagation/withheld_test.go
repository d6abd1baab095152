package propagation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestWithheld(t *testing.T) {
	p := Protected{Namespace: "platform-operators-system", OwnershipKey: "platform-operators-ownership-key", Own: []string{"platform-operators-pull"}}
	cases := []struct {
		name     string
		src      *corev1.Secret
		withheld bool
	}{
		{"the manager's ownership key is never copied", secret("platform-operators-system", "platform-operators-ownership-key", withType(corev1.SecretTypeOpaque)), true},
		{"an older key of the ring beside it is never copied", secret("platform-operators-system", "platform-operators-ownership-key-20261127", withType(TypeOwnershipKey)), true},
		{"an older key of the ring is never copied, whatever its type", secret("platform-operators-system", "platform-operators-ownership-key-1", withType(corev1.SecretTypeOpaque)), true},
		{"a Secret of the ownership-key type is never copied from any namespace", secret("team-a", "key", withType(TypeOwnershipKey)), true},
		{"a Secret of the same name in another namespace is a tenant's and may be copied", secret("team-a", "platform-operators-ownership-key", withType(corev1.SecretTypeOpaque)), false},
		{"a Helm release record (the release's values, passwords included) is never copied", secret("platform-operators-system", "sh.helm.release.v1.platform-operators.v1", withType(TypeHelmRelease), withLabel("owner", "helm")), true},
		{"a Helm release record is never copied from any namespace", secret("team-a", "sh.helm.release.v1.app.v3", withType(TypeHelmRelease)), true},
		{"a ServiceAccount token is never copied", secret("team-a", "builder-token", withType(corev1.SecretTypeServiceAccountToken)), true},
		{"a bootstrap token is never copied", secret("team-a", "bootstrap-token-abcdef", withType(TypeBootstrapToken)), true},
		{"a Helm release kept in a ConfigMap (configmap storage driver) is never copied", secret("platform-operators-system", "sh.helm.release.v1.platform-operators.v1", withType(TypeConfigMap), withLabel("owner", "helm")), true},
		{"a ConfigMap named like a release but not Helm's is copied", secret("team-a", "sh.helm.release.v1.notes", withType(TypeConfigMap)), false},
		{"an Opaque Secret of the manager's namespace may be copied (the admin chose it)", secret("platform-operators-system", "ca", withType(corev1.SecretTypeOpaque)), false},
		{"the manager's own pull credential is never copied", secret("platform-operators-system", "platform-operators-pull", withType(corev1.SecretTypeDockerConfigJson)), true},
		{"a tenant's Secret of that name elsewhere is copied", secret("team-a", "platform-operators-pull", withType(corev1.SecretTypeDockerConfigJson)), false},
		{"a pull secret is copied", secret("platform-operators-system", "registry-pull", withType(corev1.SecretTypeDockerConfigJson)), false},
		{"a TLS Secret is copied", secret("team-a", "wildcard", withType(corev1.SecretTypeTLS)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Withheld(tc.src, p); (got != "") != tc.withheld {
				t.Errorf("Withheld = %q, want withheld %v", got, tc.withheld)
			}
		})
	}
	t.Run("without a key name, no Secret is the key", func(t *testing.T) {
		if got := Withheld(secret("platform-operators-system", "", withType(corev1.SecretTypeOpaque)), Protected{Namespace: "platform-operators-system"}); got != "" {
			t.Errorf("Withheld = %q", got)
		}
	})
}

func TestWithheldMessageIsBounded(t *testing.T) {
	w := map[string]string{"ns/c": "x", "ns/a": "y", "ns/b": "z"}
	if got, want := WithheldMessage(w, 2), "ns/a (y), ns/b (z), and 1 more"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := WithheldMessage(w, 5), "ns/a (y), ns/b (z), ns/c (x)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
