package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	certutil "k8s.io/client-go/util/cert"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/platform-operators/platform-operators/controller/metricsauth"
	"github.com/platform-operators/platform-operators/controller/portguard"
)

// probeChecks are the checks /healthz and /readyz run (healthz.Handler), served by the manager's
// own health server (servePorts), not controller-runtime's: its servers read up to 1 MiB of
// request on any number of connections (package portguard).
type probeChecks struct {
	// store: one entry per check the manager registers at start (ping, informers, permissions),
	// a few hundred bytes, fixed; paid by no client.
	healthz, readyz map[string]healthz.Checker
}

// servePorts adds to mgr the metrics server (--metrics-bind-address; "0": none) and the health
// probe server (--health-probe-bind-address; "0": none), each behind portguard's bounds. The
// metrics endpoint is what controller-runtime's would be: crmetrics.Registry at /metrics, over
// HTTPS behind metricsauth (--metrics-secure) with the certificate of --metrics-cert-dir (reloaded
// when it changes) or a self-signed one, HTTP/1.1 unless --metrics-enable-http2.
func servePorts(ctx context.Context, mgr ctrl.Manager, o options, checks probeChecks, log logr.Logger) error {
	if o.probeAddr != "0" && o.probeAddr != "" {
		mux := http.NewServeMux()
		for path, c := range map[string]map[string]healthz.Checker{"/healthz": checks.healthz, "/readyz": checks.readyz} {
			h := http.StripPrefix(path, &healthz.Handler{Checks: c})
			mux.Handle(path, h)
			mux.Handle(path+"/", h) // one check: /readyz/informers
		}
		l, err := listen(o.probeAddr)
		if err != nil {
			return err
		}
		if err := mgr.Add(portguard.Server("health probe", l, mux)); err != nil {
			return err
		}
	}
	if o.metricsAddr == "0" || o.metricsAddr == "" {
		return nil
	}
	h := promhttp.HandlerFor(crmetrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	l, err := listen(o.metricsAddr)
	if err != nil {
		return err
	}
	if o.metricsSecure {
		filter, err := metricsauth.Filter(mgr.GetConfig(), mgr.GetHTTPClient())
		if err != nil {
			return err
		}
		if h, err = filter(log.WithName("metrics"), h); err != nil {
			return err
		}
		cfg, err := metricsTLS(ctx, o.metricsCertDir, o.metricsEnableHTTP2, log)
		if err != nil {
			return err
		}
		l = tls.NewListener(l, cfg)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	return mgr.Add(portguard.Server("metrics", l, mux))
}

// listen binds addr, with portguard's per-source and total connection limits.
func listen(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return portguard.Listener(l, portguard.PerSource, portguard.Total), nil
}

// metricsTLS is the metrics endpoint's TLS: tls.crt and tls.key of dir, reloaded when they change,
// or a self-signed certificate generated in memory (dir empty, or the files absent), as
// controller-runtime's metrics server does.
func metricsTLS(ctx context.Context, dir string, http2 bool, log logr.Logger) (*tls.Config, error) {
	cfg := &tls.Config{NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
	if http2 {
		cfg.NextProtos = []string{"h2", "http/1.1"}
	}
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if dir != "" && exists(crt) && exists(key) {
		w, err := certwatcher.New(crt, key)
		if err != nil {
			return nil, err
		}
		go func() {
			if err := w.Start(ctx); err != nil {
				log.Error(err, "watching the metrics certificate")
			}
		}()
		cfg.GetCertificate = w.GetCertificate
		return cfg, nil
	}
	c, k, err := certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", []net.IP{{127, 0, 0, 1}}, nil, "")
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(c, k)
	if err != nil {
		return nil, err
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
