package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
	"github.com/platform-operators/platform-operators/tests/testbed"
)

const (
	// tenantNamespace is the suite's tenant (suiteValues: tenants); the chart creates the namespace,
	// the ServiceAccount tenantNamespace-sa and its token Secret tenantNamespace-sa-token.
	tenantNamespace = "e2e-tenant"
	tenantSA        = tenantNamespace + "-sa"
	tenantSecret    = tenantSA + "-token"
	// secretSyncSource is the chart's default SecretSync source namespace.
	secretSyncSource = "secretsync"
)

type tenantClientKey struct{}

// The manager binary the tenant features run `manager kubeconfig` with, built once.
var (
	managerBinOnce sync.Once
	managerBin     string
	managerBinErr  error
)

// tenantKubeconfig runs the real `manager kubeconfig` command (built from this repository) with
// the admin kubeconfig and returns what it prints.
func tenantKubeconfig(ctx context.Context, t *testing.T, cfg *envconf.Config, args ...string) []byte {
	t.Helper()
	bin := buildManagerOnce(ctx, t)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"kubeconfig", "--kubeconfig", cfg.KubeconfigFile()}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Only --kubeconfig decides which cluster is read.
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	if err := cmd.Run(); err != nil {
		t.Fatalf("manager kubeconfig %q: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// buildManagerOnce builds the manager binary from this repository once per run and returns its path.
func buildManagerOnce(ctx context.Context, t *testing.T) string {
	t.Helper()
	managerBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "po-e2e-bin-")
		if err != nil {
			managerBinErr = err
			return
		}
		managerBin = filepath.Join(dir, "manager")
		managerBinErr = testbed.BuildManager(ctx, root, managerBin)
	})
	if managerBinErr != nil {
		t.Fatal(managerBinErr)
	}
	return managerBin
}

// tenantClient is a client acting with kubeconfig only, checked to be nothing but a token.
func tenantClient(t *testing.T, kubeconfig []byte) client.Client {
	t.Helper()
	kc, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatalf("the printed kubeconfig does not load: %v\n%s", err, kubeconfig)
	}
	for name, u := range kc.AuthInfos {
		if u.Token == "" || u.ClientCertificateData != nil || u.ClientCertificate != "" || u.Username != "" || u.Exec != nil {
			t.Fatalf("user %s of the printed kubeconfig is not a bare token: %+v", name, u)
		}
	}
	if ctx := kc.Contexts[kc.CurrentContext]; ctx == nil || ctx.Namespace != tenantNamespace {
		t.Fatalf("current context %q = %+v, want namespace %s", kc.CurrentContext, ctx, tenantNamespace)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// It authenticates as the tenant's ServiceAccount, not as whoever printed it.
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self subject review with the tenant kubeconfig: %v", err)
	}
	if want := "system:serviceaccount:" + tenantNamespace + ":" + tenantSA; review.Status.UserInfo.Username != want {
		t.Fatalf("the tenant kubeconfig authenticates as %q, want %q", review.Status.UserInfo.Username, want)
	}
	return c
}

func forbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: err = %v, want Forbidden", what, err)
	}
}

// tenantAssessments are what a tenant may and may not do, with the client in ctx.
func tenantAssessments(b *features.FeatureBuilder) *features.FeatureBuilder {
	return b.
		Assess("the tenant lists and creates pods in its namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctx.Value(tenantClientKey{}).(client.Client)
			if err := c.List(ctx, &corev1.PodList{}, client.InNamespace(tenantNamespace)); err != nil {
				t.Fatalf("tenant listing pods in %s: %v", tenantNamespace, err)
			}
			// The chart's tenant namespace enforces Pod Security restricted.
			pod := restricted(testPod(tenantNamespace, "tenant-pod"))
			if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
				t.Fatalf("tenant creating a pod in %s: %v", tenantNamespace, err)
			}
			at := &v1alpha1.At{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace, Name: "tenant-at"},
				Spec: v1alpha1.AtSpec{Schedule: metav1.NewTime(time.Now().Add(time.Hour)), Command: "true"}}
			if err := c.Create(ctx, at, client.DryRunAll); err != nil {
				t.Fatalf("tenant creating an At in %s: %v", tenantNamespace, err)
			}
			return ctx
		}).
		Assess("the tenant is Forbidden in default, on Secrets and on SecretSyncs", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := ctx.Value(tenantClientKey{}).(client.Client)
			forbidden(t, "listing pods in default", c.List(ctx, &corev1.PodList{}, client.InNamespace("default")))
			forbidden(t, "listing Secrets in the SecretSync source namespace", c.List(ctx, &corev1.SecretList{}, client.InNamespace(secretSyncSource)))
			forbidden(t, "reading its own token Secret", c.Get(ctx, client.ObjectKey{Namespace: tenantNamespace, Name: tenantSecret}, &corev1.Secret{}))
			steal := &v1alpha1.SecretSync{
				ObjectMeta: metav1.ObjectMeta{Name: "e2e-tenant-steal"},
				Spec: v1alpha1.SecretSyncSpec{
					Source: v1alpha1.SecretSyncSource{Namespace: secretSyncSource, Name: "anything"},
					Target: v1alpha1.SecretSyncTarget{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": tenantNamespace}}},
				},
			}
			forbidden(t, "creating a SecretSync", c.Create(ctx, steal))
			return ctx
		})
}

func TestTenant(t *testing.T) {
	fromSecret := features.New("a tenant acts with the kubeconfig printed from its token Secret").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The chart's token Secret is filled by the token controller shortly after the install.
			err := wait.For(func(ctx context.Context) (bool, error) {
				s := &corev1.Secret{}
				if err := cfg.Client().Resources().Get(ctx, tenantSecret, tenantNamespace, s); err != nil {
					return false, nil
				}
				return len(s.Data[corev1.ServiceAccountTokenKey]) > 0, nil
			}, wait.WithContext(ctx), wait.WithInterval(pollInterval), wait.WithTimeout(waitTimeout))
			if err != nil {
				t.Fatalf("token Secret %s/%s never got a token: %v", tenantNamespace, tenantSecret, err)
			}
			kc := tenantKubeconfig(ctx, t, cfg, "--namespace", tenantNamespace, "--service-account", tenantSA, "--from-secret", tenantSecret)
			return context.WithValue(ctx, tenantClientKey{}, tenantClient(t, kc))
		})
	fromTokenRequest := features.New("a tenant acts with the kubeconfig printed from a fresh TokenRequest").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			kc := tenantKubeconfig(ctx, t, cfg, "--namespace", tenantNamespace, "--service-account", tenantSA, "--duration", "15m")
			return context.WithValue(ctx, tenantClientKey{}, tenantClient(t, kc))
		})
	testenv.Test(t, tenantAssessments(fromSecret).Feature(), tenantAssessments(fromTokenRequest).Feature())
}
