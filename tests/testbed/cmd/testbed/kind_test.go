package main

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/platform-operators/platform-operators/tests/testbed"
)

// `make up` installs the chart with registryValues: the manager's pods must pull their image from
// the test bed's registry with its account. Since issue 28 the chart gives the manager pods only
// managerPullSecret (pullSecret is the tenants' credential); `make up` ended in ImagePullBackOff
// while this test did not exist. Since issue 36 each pull secret holds its own pull-only account:
// the manager's may pull the manager image and nothing of the tenants', the one spread to every
// namespace may pull the job image and not the manager's, and neither may push (what the
// registry's access proxy enforces, testbed.RegistryAccess).
func TestUpValuesLetTheManagerPodsPullTheirImage(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	ch, err := loader.Load(filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "charts", "platform-operators"))
	if err != nil {
		t.Fatal(err)
	}
	reg := testbed.Registry{Host: "172.18.0.1", Port: 5000, User: upRobot, Password: "s3cr3t", Accounts: upAccounts("manager-pw", "tenants-pw")}
	images := testbed.PushedImages{Registry: reg.Addr() + "/" + upManagerProject, JobRegistry: reg.Addr() + "/" + upTenantsProject,
		ManagerRepository: "manager", ManagerDigest: "sha256:" + strings.Repeat("a", 64), JobRepository: "busybox", JobTag: "1.35"}
	vals := map[string]any{}
	registryValues(vals, reg, images, "platform-operators-system")

	install := action.NewInstall(&action.Configuration{Log: t.Logf})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = "platform-operators", "platform-operators-system"
	if install.KubeVersion, err = chartutil.ParseKubeVersion("v1.36.3"); err != nil {
		t.Fatal(err)
	}
	rel, err := install.Run(ch, vals)
	if err != nil {
		t.Fatalf("rendering the chart with make up's values: %v", err)
	}
	var deploy *appsv1.Deployment
	secrets := map[string]*corev1.Secret{}
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Deployment":
			deploy = &appsv1.Deployment{}
			if err := yaml.Unmarshal([]byte(doc), deploy); err != nil {
				t.Fatal(err)
			}
		case "Secret":
			s := &corev1.Secret{}
			if err := yaml.Unmarshal([]byte(doc), s); err != nil {
				t.Fatal(err)
			}
			secrets[s.Name] = s
		}
	}
	if deploy == nil {
		t.Fatal("no Deployment rendered")
	}
	image := deploy.Spec.Template.Spec.Containers[0].Image
	if !strings.HasPrefix(image, reg.Addr()+"/") {
		t.Fatalf("manager image %q is not from the test bed's registry %s", image, reg.Addr())
	}
	// users returns the registry accounts a dockerconfigjson Secret holds for the registry.
	users := func(s *corev1.Secret) []string {
		raw, ok := s.Data[corev1.DockerConfigJsonKey]
		if !ok {
			raw = []byte(s.StringData[corev1.DockerConfigJsonKey])
		}
		var cfg struct {
			Auths map[string]struct{ Auth string } `json:"auths"`
		}
		if err := json.Unmarshal(raw, &cfg); err != nil {
			t.Fatalf("Secret %s: %v", s.Name, err)
		}
		var out []string
		for _, a := range reg.Accounts {
			if e, ok := cfg.Auths[reg.Addr()]; ok && e.Auth == base64.StdEncoding.EncodeToString([]byte(a.User+":"+a.Password)) {
				out = append(out, a.User)
			}
		}
		if e, ok := cfg.Auths[reg.Addr()]; ok && e.Auth == base64.StdEncoding.EncodeToString([]byte(reg.User+":"+reg.Password)) {
			out = append(out, reg.User)
		}
		return out
	}
	// repository is an image reference's repository within the registry (platform/manager).
	repository := func(image string) string {
		r := strings.TrimPrefix(image, reg.Addr()+"/")
		r, _, _ = strings.Cut(r, "@")
		r, _, _ = strings.Cut(r, ":")
		return r
	}
	var managerUsers []string
	for _, ref := range deploy.Spec.Template.Spec.ImagePullSecrets {
		if s, ok := secrets[ref.Name]; ok && s.Type == corev1.SecretTypeDockerConfigJson {
			managerUsers = append(managerUsers, users(s)...)
		}
	}
	if len(managerUsers) != 1 || managerUsers[0] != upManagerRobot {
		t.Fatalf("the manager pods' imagePullSecrets hold %v for %s, want %s alone", managerUsers, reg.Addr(), upManagerRobot)
	}
	tenantsSecret, ok := secrets["registry-pull"]
	if !ok {
		t.Fatal("no tenants' pull secret registry-pull rendered")
	}
	if got := users(tenantsSecret); len(got) != 1 || got[0] != upTenantsRobot {
		t.Fatalf("the tenants' pull secret holds %v, want %s alone", got, upTenantsRobot)
	}
	jobImage := reg.Addr() + "/" + upTenantsProject + "/busybox:1.35"
	if !slices.Contains(deploy.Spec.Template.Spec.Containers[0].Args, "--job-image="+jobImage) {
		t.Errorf("manager args %v, want --job-image=%s", deploy.Spec.Template.Spec.Containers[0].Args, jobImage)
	}
	manager, tenants := account(reg, upManagerRobot), account(reg, upTenantsRobot)
	for _, c := range []struct {
		what    string
		account testbed.RegistryAccount
		method  string
		repo    string
		allowed bool
	}{
		{"the manager's robot pulls the manager image", manager, "GET", repository(image), true},
		{"the manager's robot cannot pull the job image", manager, "GET", repository(jobImage), false},
		{"the manager's robot cannot push the manager image", manager, "PUT", repository(image), false},
		{"the tenants' robot pulls the job image", tenants, "GET", repository(jobImage), true},
		{"the tenants' robot cannot pull the manager image", tenants, "GET", repository(image), false},
		{"the tenants' robot cannot replace the job image", tenants, "PUT", repository(jobImage), false},
	} {
		why := testbed.RegistryAccess(c.account, c.method, "/v2/"+c.repo+"/manifests/x", url.Values{})
		if (why == "") != c.allowed {
			t.Errorf("%s: RegistryAccess = %q, want allowed=%v", c.what, why, c.allowed)
		}
	}
}
