package main

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"runtime"
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
// while this test did not exist.
func TestUpValuesLetTheManagerPodsPullTheirImage(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	ch, err := loader.Load(filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "charts", "platform-operators"))
	if err != nil {
		t.Fatal(err)
	}
	reg := testbed.Registry{Host: "172.18.0.1", Port: 5000, User: "robot$platform+ci", Password: "s3cr3t"}
	images := testbed.PushedImages{Registry: reg.Addr() + "/platform", ManagerRepository: "manager", ManagerDigest: "sha256:" + strings.Repeat("a", 64),
		JobRepository: "busybox", JobTag: "1.35"}
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
	var names []string
	for _, ref := range deploy.Spec.Template.Spec.ImagePullSecrets {
		names = append(names, ref.Name)
		s, ok := secrets[ref.Name]
		if !ok || s.Type != corev1.SecretTypeDockerConfigJson {
			continue
		}
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
		if a, ok := cfg.Auths[reg.Addr()]; ok && a.Auth == base64.StdEncoding.EncodeToString([]byte(reg.User+":"+reg.Password)) {
			return
		}
	}
	t.Fatalf("the manager pods' imagePullSecrets %v hold no credentials for %s: they cannot pull %s", names, reg.Addr(), image)
}
