package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// The chart serves metrics over HTTPS to authorized tokens only (metrics.secure, the default). In
// kind the manager runs as the chart installs it, so its /metrics is read the way Prometheus
// would: HTTPS with the token of a ServiceAccount bound to the chart's metrics-reader
// ClusterRole. The API server's pod proxy cannot do that (it does not pass the caller's token on),
// so the suite port-forwards to the pod. On kwok the manager is a local process that the test bed
// runs with plain HTTP on loopback (tests/testbed.StartManager); the HTTPS endpoint's answers are
// also tested against envtest (controller/cmd/manager/metrics_test.go).

const (
	// metricsScraper is the suite's ServiceAccount bound to metrics-reader; metricsStranger has no role.
	metricsScraper  = "e2e-metrics-scraper"
	metricsStranger = "e2e-metrics-stranger"
)

// metricsToken returns a token of sa in the release namespace, creating the ServiceAccount (and,
// with reader, its binding to the chart's metrics-reader ClusterRole) if missing.
func metricsToken(ctx context.Context, cs kubernetes.Interface, sa string, reader bool) (string, error) {
	_, err := cs.CoreV1().ServiceAccounts(releaseNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	if reader {
		_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: releaseName + "-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: releaseNamespace}},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return "", err
		}
	}
	tr, err := cs.CoreV1().ServiceAccounts(releaseNamespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// getPodMetrics port-forwards to the pod's metrics port and GETs https://.../metrics with token
// (none when empty); it returns the status code and body. The manager's certificate is
// self-signed (made at start), so it is not verified: what is tested is who may read.
func getPodMetrics(ctx context.Context, cfg *rest.Config, pod corev1.Pod, token string) (int, string, error) {
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return 0, "", err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return 0, "", err
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/portforward", pod.Namespace, pod.Name)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + containerPort(pod, "metrics")}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return 0, "", err
	}
	errc := make(chan error, 1)
	go func() { errc <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		return 0, "", fmt.Errorf("port-forward to %s: %w", pod.Name, err)
	case <-ctx.Done():
		return 0, "", ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil {
		return 0, "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", ports[0].Local), nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	httpc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := httpc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestMetricsNeedAnAuthorizedToken(t *testing.T) {
	f := features.New("metrics over HTTPS").
		Assess("the leader's /metrics refuses anonymous and unauthorized callers and serves a metrics-reader", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			skipUnlessKind(t)
			cs, pod, err := leader(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			stranger, err := metricsToken(ctx, cs, metricsStranger, false)
			if err != nil {
				t.Fatal(err)
			}
			reader, err := metricsToken(ctx, cs, metricsScraper, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				who, token string
				want       int
			}{
				{"no token", "", http.StatusUnauthorized},
				{"a ServiceAccount without metrics-reader", stranger, http.StatusForbidden},
				{"a ServiceAccount bound to metrics-reader", reader, http.StatusOK},
			} {
				// RBAC caches in the API server may lag the binding by a moment.
				var code int
				var body string
				waitFor(ctx, t, waitTimeout, fmt.Sprintf("%s: /metrics never answered %d", c.who, c.want), func(ctx context.Context) (bool, error) {
					code, body, err = getPodMetrics(ctx, cfg.Client().RESTConfig(), *pod, c.token)
					if err != nil || code != c.want {
						t.Logf("%s: /metrics: %d %v %.200s", c.who, code, err, body)
					}
					return err == nil && code == c.want, nil
				})
				if c.want == http.StatusOK && !strings.Contains(body, "controller_runtime_reconcile_total") {
					t.Errorf("%s: the body holds no controller-runtime metric: %.300s", c.who, body)
				}
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
