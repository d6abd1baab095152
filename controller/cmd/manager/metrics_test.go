package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/platform-operators/platform-operators/controller/enablement"
	"github.com/platform-operators/platform-operators/controller/internal/testenv"
	"github.com/platform-operators/platform-operators/controller/metricsauth/metricsauthtest"
)

// The manager's default metrics endpoint, against a real API server (TokenReview and
// SubjectAccessReview with RBAC): HTTPS; no token is 401, a ServiceAccount without a role that
// grants GET /metrics is 403, and one bound to a metrics-reader ClusterRole (the chart's rule)
// reads the metrics.
func TestSecureMetricsNeedAnAuthorizedToken(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	cfg := testenv.StartAPIServer(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tok := metricsauthtest.Accounts(ctx, t, cs, "default")

	addr := freeAddress(t)
	o, err := parseFlags([]string{"--metrics-bind-address=" + addr, "--health-probe-bind-address=0", "--leader-elect=false", "--controllers=-secretsync,-at,-scheduledjob"})
	if err != nil {
		t.Fatal(err)
	}
	enabled, err := enablement.Resolve(splitList(o.controllers), known)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := newManager(ctx, o, enabled, cfg, logr.Discard(), prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	defer func() { cancel(); <-done }()

	// The certificate is self-signed, generated at start: the test checks who may read, not the certificate.
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(bearer string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	var code int
	var body string
	eventually(t, func() string { return "the metrics endpoint never answered over HTTPS: " + body }, func() bool {
		code, body, err = get("")
		if err != nil {
			body = err.Error()
		}
		return err == nil
	})
	if code != http.StatusUnauthorized {
		t.Errorf("no token: %d %q, want 401", code, body)
	}
	if code, body, err = get("not-a-token"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("a token the API server does not know: %d %q %v, want 401", code, body, err)
	}
	if code, body, err = get(tok.Nobody); err != nil || code != http.StatusForbidden {
		t.Errorf("a ServiceAccount without the metrics-reader role: %d %q %v, want 403", code, body, err)
	}
	if code, body, err = get(tok.Scraper); err != nil || code != http.StatusOK || !strings.Contains(body, "controller_runtime_") {
		t.Errorf("a ServiceAccount bound to metrics-reader: %d %v, want 200 with controller-runtime's metrics; body:\n%.300s", code, err, body)
	}
	// HTTP/2 is not offered (--metrics-enable-http2 is off): a client that prefers it gets HTTP/1.1.
	h2c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if resp, err := h2c.Get("https://" + addr + "/metrics"); err != nil {
		t.Errorf("GET /metrics preferring HTTP/2: %v", err)
	} else {
		resp.Body.Close()
		if resp.ProtoMajor != 1 {
			t.Errorf("the metrics endpoint answered over %s, want HTTP/1.1 unless --metrics-enable-http2", resp.Proto)
		}
	}
	// Plain HTTP is not answered on the HTTPS port.
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP GET /metrics answered 200")
		}
	}
}
