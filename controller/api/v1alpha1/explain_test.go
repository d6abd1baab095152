package v1alpha1_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
)

// embeddedObjectMetaFields are the fields controller-gen writes for an embedded ObjectMeta
// (crd:generateEmbeddedObjectMeta=true, jobTemplate.metadata) without descriptions; kubectl
// explain prints them with their type only. They are Kubernetes' own metadata fields.
var embeddedObjectMetaFields = map[string]bool{"annotations": true, "finalizers": true, "labels": true, "name": true, "namespace": true}

// undescribed walks a schema and returns the path of every field (property) without a
// description. Items of lists and values of maps are not fields: kubectl explain shows the
// list's or map's own description.
func undescribed(path string, s apiextensionsv1.JSONSchemaProps, parentIsMetadata bool) []string {
	var out []string
	for name, p := range s.Properties {
		child := path + "." + name
		exempt := (path == "" && name == "metadata") || (parentIsMetadata && embeddedObjectMetaFields[name])
		if strings.TrimSpace(p.Description) == "" && !exempt {
			out = append(out, strings.TrimPrefix(child, "."))
		}
		out = append(out, undescribed(child, p, name == "metadata" && path != "")...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		out = append(out, undescribed(path+"[]", *s.Items.Schema, false)...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out = append(out, undescribed(path+"{}", *s.AdditionalProperties.Schema, false)...)
	}
	sort.Strings(out)
	return out
}

func TestUndescribedFindsMissingDescriptions(t *testing.T) {
	s := apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"metadata": {Type: "object"},
		"spec": {Description: "the spec", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"ok":   {Description: "described"},
			"bare": {Type: "string"},
			"list": {Description: "a list", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"inner": {Description: "  "}}}}},
			"template": {Description: "embedded", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"metadata": {Description: "meta", Properties: map[string]apiextensionsv1.JSONSchemaProps{"labels": {Type: "object"}, "other": {Type: "string"}}}}},
		}},
	}}
	got := strings.Join(undescribed("", s, false), " ")
	if got != "spec.bare spec.list[].inner spec.template.metadata.other" {
		t.Errorf("undescribed = %q", got)
	}
}

// TestEveryFieldHasExplainText: `kubectl explain` prints a description for every field of every
// kind, spec and status, nested ones included, and for the kind itself.
func TestEveryFieldHasExplainText(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "charts", "platform-operators", "files", "crds", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("CRD files: %v, %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			root := *v.Schema.OpenAPIV3Schema
			if len(strings.Fields(root.Description)) < 10 {
				t.Errorf("%s %s: the kind's description %q does not say what it does", crd.Spec.Names.Kind, v.Name, root.Description)
			}
			for _, p := range undescribed("", root, false) {
				t.Errorf("%s %s: %s has no description (kubectl explain shows nothing)", crd.Spec.Names.Kind, v.Name, p)
			}
		}
	}
}

// TestKubectlShowsExplainTextAndColumns runs the pinned kubectl against an API server with the
// chart's CRDs: `kubectl explain` prints a nested field's description, and `kubectl get` shows
// the columns users ask for first.
func TestKubectlShowsExplainTextAndColumns(t *testing.T) {
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl is built into bin/ by make tools: %v", err)
	}
	cfg := testenv.StartAPIServer(t)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// The API server publishes a new CRD's OpenAPI a few seconds after it is established.
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "explain", "scheduledjobs").CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl explain scheduledjobs: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, tc := range []struct{ field, want string }{
		{"secretsyncs.spec.source.namespace", "holds the source Secrets"},
		{"secretsyncs.status.lastSyncTime", "last wrote a copy"},
		{"scheduledjobs.spec.concurrencyPolicy", "DESCRIPTION"},
		{"ats.spec", "DESCRIPTION"},
	} {
		out := run("explain", tc.field)
		if !strings.Contains(out, tc.want) || strings.Contains(out, "<empty>") {
			t.Errorf("kubectl explain %s does not say %q:\n%s", tc.field, tc.want, out)
		}
	}
	objs := filepath.Join(t.TempDir(), "objs.yaml")
	if err := os.WriteFile(objs, []byte(`apiVersion: ops.platform-operators.io/v1alpha1
kind: SecretSync
metadata: {name: columns}
spec: {source: {namespace: src, name: creds}}
---
apiVersion: ops.platform-operators.io/v1alpha1
kind: ScheduledJob
metadata: {name: columns, namespace: default}
spec:
  schedule: "0 2 * * *"
  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}
---
apiVersion: ops.platform-operators.io/v1alpha1
kind: ScheduledJob
metadata: {name: columns-many, namespace: default}
spec:
  schedules: ["0 3 * * *", "30 12 * * 1-5"]
  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}
---
apiVersion: ops.platform-operators.io/v1alpha1
kind: At
metadata: {name: columns, namespace: default}
spec: {schedule: "2030-01-01T00:00:00Z", command: "echo hi"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	run("apply", "-f", objs)
	for kind, want := range map[string][]string{
		"secretsyncs":   {"SOURCE", "SYNCED", "CONFLICTS", "FAILED", "READY", "LAST SYNC", "AGE"},
		"scheduledjobs": {"SCHEDULE", "TIMEZONE", "SUSPEND", "LAST SCHEDULE", "LAST RESULT", "LAST SUCCESS", "NEXT SCHEDULE", "READY", "AGE"},
		"ats":           {"RUNS AT", "PHASE", "JOB", "COMPLETED", "AGE"},
	} {
		header := strings.SplitN(run("get", kind, "-A"), "\n", 2)[0]
		for _, col := range want {
			if !strings.Contains(header, col) {
				t.Errorf("kubectl get %s: header %q lacks %s", kind, header, col)
			}
		}
	}
	// SCHEDULE shows status.scheduleSummary, which the controller writes for schedule and
	// schedules alike (no controller runs here: the test writes what it would).
	for name, summary := range map[string]string{"columns": "0 2 * * *", "columns-many": "0 3 * * * | 30 12 * * 1-5"} {
		run("patch", "scheduledjob", name, "-n", "default", "--subresource=status", "--type=merge", "-p", `{"status":{"scheduleSummary":"`+summary+`"}}`)
		lines := strings.Split(strings.TrimSpace(run("get", "sj", name, "-n", "default")), "\n")
		if len(lines) != 2 || !strings.Contains(lines[1], summary) || strings.Index(lines[0], "SCHEDULE") != strings.Index(lines[1], summary) {
			t.Errorf("kubectl get sj %s does not show %q under SCHEDULE:\n%s", name, summary, strings.Join(lines, "\n"))
		}
	}
	// At's short name works, and no short name of ours hides a resource the cluster serves.
	if out := run("get", "atj", "-n", "default", "--no-headers"); !strings.HasPrefix(out, "columns ") {
		t.Errorf("kubectl get atj: %q, want the At columns", out)
	}
	lists, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	others := map[string]string{} // every name kubectl resolves, of resources not ours
	ours := map[string][]string{} // our resources' short names
	for _, l := range lists {
		for _, r := range l.APIResources {
			if strings.HasPrefix(l.GroupVersion, v1alpha1.GroupVersion.Group+"/") {
				ours[r.Name] = r.ShortNames
				continue
			}
			for _, n := range append([]string{r.Name, r.SingularName}, r.ShortNames...) {
				others[n] = l.GroupVersion + " " + r.Name
			}
		}
	}
	if len(ours["ats"]) == 0 || len(ours["scheduledjobs"]) == 0 || len(ours["copyrequests"]) == 0 || len(ours["secretsyncs"]) == 0 {
		t.Errorf("short names = %v, want one for every kind", ours)
	}
	seen := map[string]string{}
	for res, shorts := range ours {
		for _, s := range shorts {
			if other, ok := others[s]; ok {
				t.Errorf("the short name %s of %s is also %s", s, res, other)
			}
			if prev, ok := seen[s]; ok {
				t.Errorf("the short name %s is both %s's and %s's", s, res, prev)
			}
			seen[s] = res
		}
	}
}
