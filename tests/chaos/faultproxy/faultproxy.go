// Package faultproxy is the harness's fault-injecting reverse proxy between the manager and the
// API server: it passes requests through (Authorization header included, watches streamed), or
// answers a fraction of them 429 with Retry-After, adds latency, or stalls (new requests wait,
// open streams deliver nothing) for a while. Decide holds the per-request decision as a pure
// function; Proxy applies it.
package faultproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Kind is a fault mode.
type Kind string

// Fault modes.
const (
	Pass     Kind = "pass"
	TooMany  Kind = "429"
	Slow     Kind = "latency"
	Stall    Kind = "stall"
	watchArg      = "watch"
)

// Mode is the proxy's current fault.
type Mode struct {
	Kind Kind
	// Fraction of requests (0..1) answered 429; watches are never rejected (client-go re-lists
	// on a failed watch, which is a different fault).
	Fraction float64
	// RetryAfter is the Retry-After seconds of a 429.
	RetryAfter int
	// Latency is added before forwarding (Slow).
	Latency time.Duration
}

// Action is what the proxy does with one request.
type Action struct {
	// Reject answers 429 with Retry-After.
	Reject bool
	// Delay waits this long before forwarding.
	Delay time.Duration
	// Hold waits until the stall ends before forwarding.
	Hold bool
}

// Decide is the decision for one request; roll is a uniform random number in [0, 1).
func Decide(m Mode, isWatch bool, roll float64) Action {
	switch m.Kind {
	case TooMany:
		if !isWatch && roll < m.Fraction {
			return Action{Reject: true}
		}
	case Slow:
		return Action{Delay: m.Latency}
	case Stall:
		return Action{Hold: true}
	}
	return Action{}
}

// IsWatch reports whether a request is a watch (?watch=true or /watch/ paths).
func IsWatch(r *http.Request) bool {
	if v := r.URL.Query().Get(watchArg); v == "true" || v == "1" {
		return true
	}
	return strings.Contains(r.URL.Path, "/watch/")
}

// Proxy forwards to an API server and injects the current Mode.
type Proxy struct {
	mu      sync.Mutex
	mode    Mode
	resumed chan struct{} // closed when a stall ends
	// Counts of what it did, by action.
	Rejected, Delayed, Held, Forwarded int
	rp                                 *httputil.ReverseProxy
}

// New returns a proxy to target, verifying the API server's certificate with ca.
func New(target *url.URL, ca *x509.CertPool) *Proxy {
	p := &Proxy{mode: Mode{Kind: Pass}, resumed: closed()}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	rp.Transport = &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 100,
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		resp.Body = &stallingBody{ReadCloser: resp.Body, p: p}
		return nil
	}
	rp.ErrorLog = nil
	p.rp = rp
	return p
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// SetMode switches the fault; leaving Stall releases every held request and stream.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	wasStall := p.mode.Kind == Stall
	p.mode = m
	switch {
	case m.Kind == Stall && !wasStall:
		p.resumed = make(chan struct{})
	case m.Kind != Stall && wasStall:
		close(p.resumed)
	}
}

func (p *Proxy) current() (Mode, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.resumed
}

func (p *Proxy) count(f *int) {
	p.mu.Lock()
	*f++
	p.mu.Unlock()
}

// ServeHTTP applies the decision, then forwards.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m, resumed := p.current()
	a := Decide(m, IsWatch(r), rand.Float64())
	switch {
	case a.Reject:
		p.count(&p.Rejected)
		w.Header().Set("Retry-After", strconv.Itoa(max(m.RetryAfter, 1)))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"fault proxy: too many requests","reason":"TooManyRequests","code":429}`)
		return
	case a.Delay > 0:
		p.count(&p.Delayed)
		select {
		case <-time.After(a.Delay):
		case <-r.Context().Done():
			return
		}
	case a.Hold:
		p.count(&p.Held)
		select {
		case <-resumed:
		case <-r.Context().Done():
			return
		}
	}
	p.count(&p.Forwarded)
	p.rp.ServeHTTP(w, r)
}

// stallingBody delivers nothing while the proxy stalls: an open watch stays open without data.
type stallingBody struct {
	io.ReadCloser
	p *Proxy
}

func (b *stallingBody) Read(buf []byte) (int, error) {
	n, err := b.ReadCloser.Read(buf)
	if m, resumed := b.p.current(); m.Kind == Stall {
		<-resumed
	}
	return n, err
}

// Serve serves TLS on l with cert until ctx ends.
func (p *Proxy) Serve(ctx context.Context, l net.Listener, cert tls.Certificate) error {
	srv := &http.Server{Handler: p, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		p.SetMode(Mode{Kind: Pass})
		_ = srv.Close()
	}()
	err := srv.ServeTLS(l, "", "")
	if err == http.ErrServerClosed {
		return nil
	}
	return err
}
