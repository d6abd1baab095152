package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestTheDocsCarryTheTestedScript reads the argocd-cm of docs/gitops.md as Argo CD would and
// compares its health script with the one the controllers' tests run.
func TestTheDocsCarryTheTestedScript(t *testing.T) {
	script, err := os.ReadFile(HealthScript())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(HealthScript()), "..", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- argocd-health:begin -->\n```yaml\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- argocd-health:end -->")
	if !ok || !ok2 {
		t.Fatal("docs/gitops.md has no argocd-health block")
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict([]byte(block), &cm); err != nil {
		t.Fatalf("the docs' argocd-cm is not a ConfigMap: %v", err)
	}
	if got := cm.Data["resource.customizations.health.ops.platform-operators.io_*"]; got != string(script) {
		t.Errorf("docs/gitops.md's health check differs from %s: copy it in, indented by four spaces; the docs have:\n%s", HealthScript(), got)
	}
}
