package portguard

import (
	"net"
	"net/http"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

const (
	// MaxHeaderBytes bounds a request's line and headers (Go's server allows 4 KiB more): a
	// scrape or a probe sends well under 1 KiB, a bearer token up to 16 KiB (metricsauth's bound).
	MaxHeaderBytes = 24 << 10
	// ReadHeaderTimeout is how long a connection may take to send a request's line and headers.
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a kept-alive connection that sends nothing (scrapers reuse theirs within
	// their interval, 15-60 s).
	IdleTimeout = 2 * time.Minute
	// PerSource is the most connections one source address may hold open: a scraper or the
	// kubelet needs a few; a flood from one pod cannot take the others' share.
	PerSource = 16
	// Total is the most connections in all: with MaxHeaderBytes, about 28 KiB each at most
	// (the header buffer and Go's 4 KiB read and write buffers), 7 MiB for every one.
	Total = 256
)

// Server is a controller-runtime runnable serving h on l (Listener, and tls.NewListener for
// HTTPS, done by the caller) with the bounds above. It runs on every replica (a standby answers
// probes and scrapes too).
func Server(name string, l net.Listener, h http.Handler) *manager.Server {
	return &manager.Server{Name: name, Listener: l, Server: &http.Server{
		Handler:           h,
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
	}}
}

// Listener wraps l: a connection beyond perSource open ones from its source address, or beyond
// total in all, is closed as soon as it is accepted.
func Listener(l net.Listener, perSource, total int) net.Listener {
	return &listener{Listener: l, perSource: perSource, total: total, open: map[string]int{}}
}

type listener struct {
	net.Listener
	perSource, total int

	mu sync.Mutex
	// store: one entry per source address with a connection open, at most total entries of an
	// address and a count (about 100 bytes each); paid by whoever connects to the port.
	open map[string]int
	n    int
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := source(c.RemoteAddr())
		l.mu.Lock()
		ok := l.n < l.total && l.open[src] < l.perSource
		if ok {
			l.n++
			l.open[src]++
		}
		l.mu.Unlock()
		if ok {
			return &conn{Conn: c, release: func() { l.release(src) }}, nil
		}
		_ = c.Close()
	}
}

func (l *listener) release(src string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.open[src]--; l.open[src] <= 0 {
		delete(l.open, src)
	}
}

// source is the address's host (the port varies per connection).
func source(a net.Addr) string {
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
