package tenantconfig

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
)

const pemCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func TestBuild(t *testing.T) {
	id := Identity{Namespace: "ask", ServiceAccount: "ask-sa", Token: "tok"}
	cases := []struct {
		name        string
		cluster     Cluster
		id          Identity
		contextName string
		wantErr     string
		// want* describe the kubeconfig's current context.
		wantContext, wantCluster, wantServer string
		wantCA                               string
		wantInsecure                         bool
	}{
		{
			name:    "the token is the only credential and the tenant namespace is the default",
			cluster: Cluster{Server: "https://127.0.0.1:6443", CAData: []byte(pemCA)}, id: id,
			wantContext: "ask-sa@ask", wantCluster: "cluster", wantServer: "https://127.0.0.1:6443", wantCA: pemCA,
		},
		{
			name:    "a context name and cluster name given are used",
			cluster: Cluster{Name: "prod", Server: "https://api.example.com"}, id: id, contextName: "ask",
			wantContext: "ask", wantCluster: "prod", wantServer: "https://api.example.com",
		},
		{
			name:    "insecure is kept only when there is no CA (client-go refuses both)",
			cluster: Cluster{Server: "https://x", CAData: []byte(pemCA), InsecureSkipTLSVerify: true}, id: id,
			wantContext: "ask-sa@ask", wantCluster: "cluster", wantServer: "https://x", wantCA: pemCA,
		},
		{
			name:    "insecure without a CA is kept",
			cluster: Cluster{Server: "https://x", InsecureSkipTLSVerify: true}, id: id,
			wantContext: "ask-sa@ask", wantCluster: "cluster", wantServer: "https://x", wantInsecure: true,
		},
		{name: "an empty server is refused", cluster: Cluster{}, id: id, wantErr: "API server URL"},
		{name: "an empty token is refused", cluster: Cluster{Server: "https://x"}, id: Identity{Namespace: "ask", ServiceAccount: "ask-sa"}, wantErr: "no token"},
		{name: "a missing ServiceAccount is refused", cluster: Cluster{Server: "https://x"}, id: Identity{Namespace: "ask", Token: "t"}, wantErr: "must be set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Build(tc.cluster, tc.id, tc.contextName)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			kc, err := clientcmd.Load(data)
			if err != nil {
				t.Fatal(err)
			}
			if kc.CurrentContext != tc.wantContext {
				t.Errorf("current context = %q, want %q", kc.CurrentContext, tc.wantContext)
			}
			ctx := kc.Contexts[kc.CurrentContext]
			if ctx == nil || ctx.Namespace != tc.id.Namespace || ctx.Cluster != tc.wantCluster {
				t.Fatalf("context = %+v, want namespace %q, cluster %q", ctx, tc.id.Namespace, tc.wantCluster)
			}
			if len(kc.AuthInfos) != 1 {
				t.Errorf("kubeconfig has %d users, want 1", len(kc.AuthInfos))
			}
			user := kc.AuthInfos[ctx.AuthInfo]
			if user == nil || user.Token != tc.id.Token || user.ClientCertificateData != nil || user.ClientKeyData != nil ||
				user.Username != "" || user.Password != "" || user.Exec != nil || user.AuthProvider != nil || user.TokenFile != "" {
				t.Errorf("user = %+v, want only the token %q", user, tc.id.Token)
			}
			cl := kc.Clusters[ctx.Cluster]
			if cl.Server != tc.wantServer || string(cl.CertificateAuthorityData) != tc.wantCA || cl.InsecureSkipTLSVerify != tc.wantInsecure {
				t.Errorf("cluster = %+v, want server %q, CA %q, insecure %t", cl, tc.wantServer, tc.wantCA, tc.wantInsecure)
			}
			// client-go accepts it as a client configuration.
			if _, err := clientcmd.RESTConfigFromKubeConfig(data); err != nil {
				t.Errorf("client-go rejects the kubeconfig: %v", err)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr string
		want    Options
	}{
		{
			name: "a TokenRequest of one hour is the default",
			args: []string{"--namespace=ask", "--service-account=ask-sa"},
			want: Options{Namespace: "ask", ServiceAccount: "ask-sa", Duration: time.Hour, Wait: 30 * time.Second},
		},
		{
			name: "the token Secret can be named instead",
			args: []string{"--namespace", "ask", "--service-account", "ask-sa", "--from-secret", "ask-sa-token", "--server", "https://x"},
			want: Options{Namespace: "ask", ServiceAccount: "ask-sa", FromSecret: "ask-sa-token", Server: "https://x", Duration: time.Hour, Wait: 30 * time.Second},
		},
		{name: "the namespace is required", args: []string{"--service-account=ask-sa"}, wantErr: "required"},
		{name: "the ServiceAccount is required", args: []string{"--namespace=ask"}, wantErr: "required"},
		{name: "a Secret and a duration exclude each other", args: []string{"--namespace=ask", "--service-account=a", "--from-secret=s", "--duration=2h"}, wantErr: "exclude each other"},
		{name: "a duration under ten minutes is refused", args: []string{"--namespace=ask", "--service-account=a", "--duration=5m"}, wantErr: "at least 10m"},
		{name: "a duration over a day is refused", args: []string{"--namespace=ask", "--service-account=a", "--duration=25h"}, wantErr: "--duration must be at most 24h, not 25h0m0s"},
		{name: "a year is refused", args: []string{"--namespace=ask", "--service-account=a", "--duration=8760h"}, wantErr: "at most 24h"},
		{
			name: "a day is the longest lifetime",
			args: []string{"--namespace=ask", "--service-account=ask-sa", "--duration=24h"},
			want: Options{Namespace: "ask", ServiceAccount: "ask-sa", Duration: 24 * time.Hour, Wait: 30 * time.Second},
		},
		{name: "stray arguments are refused", args: []string{"--namespace=ask", "--service-account=a", "extra"}, wantErr: "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseFlags(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("options = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func tokenSecret(name, sa string, typ corev1.SecretType, token string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ask", Name: name, Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
		Type:       typ,
	}
	if token != "" {
		s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(token)}
	}
	return s
}

func TestSecretToken(t *testing.T) {
	cases := []struct {
		name      string
		secret    *corev1.Secret
		wantToken string
		wantErr   string
	}{
		{name: "the token of the ServiceAccount's token Secret is returned", secret: tokenSecret("ask-sa-token", "ask-sa", corev1.SecretTypeServiceAccountToken, "tok"), wantToken: "tok"},
		{name: "a Secret of another type is refused", secret: tokenSecret("ask-sa-token", "ask-sa", corev1.SecretTypeOpaque, "tok"), wantErr: "has type"},
		{name: "a token of another ServiceAccount is refused", secret: tokenSecret("ask-sa-token", "admin", corev1.SecretTypeServiceAccountToken, "tok"), wantErr: `ServiceAccount "admin"`},
		{name: "a Secret the token controller never fills times out with the reason", secret: tokenSecret("ask-sa-token", "ask-sa", corev1.SecretTypeServiceAccountToken, ""), wantErr: "has no \"token\" yet"},
		{name: "a missing Secret is an error", secret: tokenSecret("other", "ask-sa", corev1.SecretTypeServiceAccountToken, "tok"), wantErr: "not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(tc.secret)
			got, err := SecretToken(context.Background(), cs, "ask", "ask-sa-token", "ask-sa", 600*time.Millisecond)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.wantToken {
				t.Fatalf("token, err = %q, %v; want %q", got, err, tc.wantToken)
			}
		})
	}
}

// ParseFlags parses the command's arguments and validates them; -h gives flag.ErrHelp.
func ParseFlags(args []string) (Options, error) {
	var o Options
	fs := NewFlagSet(&o)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.Validate(fs)
}
