package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/platform-operators/platform-operators/tests/chaos/faultproxy"
)

// kindGateway is the host's address on the kind Docker network: pods reach it through their
// node (the egress guard lets traffic to the node network pass), and it is no wider than the
// test bed's own network.
func kindGateway(ctx context.Context) (net.IP, error) {
	out, err := exec.CommandContext(ctx, dockerClient(), "network", "inspect", "kind", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}").Output()
	if err != nil {
		return nil, fmt.Errorf("docker network inspect kind: %w", err)
	}
	for _, f := range strings.Fields(string(out)) {
		if ip := net.ParseIP(f); ip != nil && ip.To4() != nil {
			return ip, nil
		}
	}
	return nil, fmt.Errorf("the kind network has no IPv4 gateway (%q)", out)
}

func nodeFile(ctx context.Context, path string) ([]byte, error) {
	b, err := exec.CommandContext(ctx, dockerClient(), "exec", clusterName+"-control-plane", "cat", path).Output()
	if err != nil {
		return nil, fmt.Errorf("reading %s from the control-plane node: %w", path, err)
	}
	return b, nil
}

// startProxy starts the fault proxy on the kind gateway with a serving certificate for it
// signed by the cluster CA, forwarding to the API server (verified with that CA). It runs until
// ctx ends.
func (h *harness) startProxy(ctx context.Context) (*faultproxy.Proxy, string, error) {
	gw, err := kindGateway(ctx)
	if err != nil {
		return nil, "", err
	}
	caCrt, err := nodeFile(ctx, "/etc/kubernetes/pki/ca.crt")
	if err != nil {
		return nil, "", err
	}
	caKey, err := nodeFile(ctx, "/etc/kubernetes/pki/ca.key")
	if err != nil {
		return nil, "", err
	}
	cert, err := faultproxy.ServingCert(caCrt, caKey, gw)
	if err != nil {
		return nil, "", err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caCrt)
	cfg, err := clientcmd.BuildConfigFromFlags("", h.kubecfg)
	if err != nil {
		return nil, "", err
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(gw.String(), "0"))
	if err != nil {
		return nil, "", err
	}
	p := faultproxy.New(target, pool)
	go func() {
		if err := p.Serve(ctx, l, cert); err != nil {
			step("fault proxy: %v", err)
		}
	}()
	return p, l.Addr().String(), nil
}

// proxyFaults routes both managers through the fault proxy (extraEnv KUBERNETES_SERVICE_HOST and
// _PORT, leader election included) and runs three faults, each with a source update: 429 for
// half the requests, added latency, and a stall.
func proxyFaults(ctx context.Context, h *harness, r *result) error {
	p, addr, err := h.startProxy(ctx)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(addr)
	vals := copyValues(h.vals)
	vals["extraEnv"] = []any{
		map[string]any{"name": "KUBERNETES_SERVICE_HOST", "value": host},
		map[string]any{"name": "KUBERNETES_SERVICE_PORT", "value": port},
	}
	step("helm upgrade: managers through the fault proxy at %s", addr)
	if _, err := upgradeInstall(h, vals); err != nil {
		return err
	}
	if err := h.waitManagersReady(ctx); err != nil {
		return err
	}
	if err := h.waitLeader(ctx); err != nil {
		return err
	}
	w := h.begin()
	r.Start = time.Now()
	phases := []struct {
		mode faultproxy.Mode
		dur  time.Duration
		text string
	}{
		{faultproxy.Mode{Kind: faultproxy.TooMany, Fraction: 0.5, RetryAfter: 1}, 30 * time.Second, "429 + Retry-After: 1 for 50% of requests, 30 s"},
		{faultproxy.Mode{Kind: faultproxy.Slow, Latency: time.Second}, 30 * time.Second, "+1 s on every request, 30 s"},
		{faultproxy.Mode{Kind: faultproxy.Stall}, 25 * time.Second, "stall 25 s (requests held, watch streams silent)"},
	}
	for _, ph := range phases {
		before := p.Forwarded
		digest, t0, err := h.bumpSource(ctx)
		if err != nil {
			return err
		}
		p.SetMode(ph.mode)
		if err := sleepUntil(ctx, t0.Add(ph.dur)); err != nil {
			p.SetMode(faultproxy.Mode{Kind: faultproxy.Pass})
			return err
		}
		p.SetMode(faultproxy.Mode{Kind: faultproxy.Pass})
		tEnd := time.Now()
		end, ok := h.rec.waitFor(ctx, 3*time.Minute, h.converged(digest))
		if !ok {
			r.figure("%s: copies did not converge within 3m after it", ph.text)
			h.waitCopies(ctx, r, digest, t0)
			continue
		}
		r.converge(tEnd, end)
		after := "before the fault ended"
		if end.After(tEnd) {
			after = fmt.Sprintf("%.1f s after the fault ended", end.Sub(tEnd).Seconds())
		}
		r.figure("%s: copies converged %s (%d requests forwarded meanwhile)", ph.text, after, p.Forwarded-before)
	}
	r.figure("proxy totals: %d rejected 429, %d delayed, %d held, %d forwarded", p.Rejected, p.Delayed, p.Held, p.Forwarded)
	if p.Forwarded == 0 {
		r.Error = "no request went through the proxy: the managers did not use it"
	}
	// A stall past the renew deadline costs each replica its Lease (it exits and restarts once).
	if err := h.waitManagersReady(ctx); err != nil {
		return err
	}
	return h.finish(ctx, r, w, nil, 2)
}
