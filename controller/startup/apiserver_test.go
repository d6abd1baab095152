package startup

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
)

// logLines records what a logger writes, one string per line.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

func (l *logLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// flakyAPIServer answers /readyz with 500 for the first fail requests, then 200.
func flakyAPIServer(t *testing.T, fail int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if n := requests.Add(1); int(n) <= fail {
			http.Error(w, "[-]etcd failed: reason withheld", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// refusedAddress is a loopback address where nothing listens.
func refusedAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr
}

func TestAPIServerWait(t *testing.T) {
	const forever = 1 << 30
	cases := []struct {
		name     string
		fail     int  // failed answers before the first 200; forever: never ready
		refused  bool // nothing listens at the address
		timeout  time.Duration
		wantErr  []string
		wantLogs []string // one regular expression per logged line, in order
		wantReqs int32    // requests the server saw; -1: do not check
	}{
		{name: "a server that answers at once is not waited for", timeout: time.Second, wantReqs: 1},
		{
			name: "a server that fails three times is asked again with doubling pauses up to the cap",
			fail: 3, timeout: 10 * time.Second, wantReqs: 4,
			wantLogs: []string{
				`^"level"=0 "msg"="Waiting for the Kubernetes API server" "host"="http://127\.0\.0\.1:\d+" "error"="an error on the server \(\\"\[-\]etcd failed: reason withheld\\"\) has prevented the request from succeeding" "attempt"=1 "retryIn"="10ms"$`,
				`"attempt"=2 "retryIn"="20ms"$`,
				`"attempt"=3 "retryIn"="30ms"$`,
				`"msg"="The Kubernetes API server answers" "host"="http://127\.0\.0\.1:\d+" "attempts"=4$`,
			},
		},
		{
			name: "a server that is never ready is an error after the timeout that names the host",
			fail: forever, timeout: 150 * time.Millisecond, wantReqs: -1,
			wantErr: []string{"did not answer within 150ms", "attempts, --api-server-wait-timeout", "has prevented the request from succeeding", "http://127.0.0.1:"},
		},
		{
			name:    "a refused connection is an error after the timeout",
			refused: true, timeout: 100 * time.Millisecond, wantReqs: -1,
			wantErr: []string{"did not answer within 100ms", "connection refused"},
		},
		{
			name: "a zero timeout makes one attempt and fails at once",
			fail: forever, timeout: 0, wantReqs: 1,
			wantErr: []string{"--api-server-wait-timeout=0: no retries"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, requests := flakyAPIServer(t, tc.fail)
			host := srv.URL
			if tc.refused {
				host = refusedAddress(t)
			}
			ping, err := ReadyzPing(&rest.Config{Host: host})
			if err != nil {
				t.Fatal(err)
			}
			var logs logLines
			w := APIServerWait{
				Ping: ping, Host: host, Timeout: tc.timeout, Log: logs.logger(),
				InitialDelay: 10 * time.Millisecond, MaxDelay: 30 * time.Millisecond, AttemptTimeout: time.Second,
			}
			start := time.Now()
			err = w.Run(context.Background())
			elapsed := time.Since(start)
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatal("err = nil, want one")
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("err = %q, want it to contain %q", err, want)
					}
				}
				if elapsed < tc.timeout || elapsed > tc.timeout+2*time.Second {
					t.Errorf("gave up after %s, want about %s", elapsed, tc.timeout)
				}
			}
			if tc.wantReqs >= 0 && requests.Load() != tc.wantReqs {
				t.Errorf("requests = %d, want %d", requests.Load(), tc.wantReqs)
			}
			lines := logs.get()
			if tc.wantLogs != nil {
				if len(lines) != len(tc.wantLogs) {
					t.Fatalf("logged %d lines, want %d:\n%s", len(lines), len(tc.wantLogs), strings.Join(lines, "\n"))
				}
				for i, want := range tc.wantLogs {
					if !regexp.MustCompile(want).MatchString(lines[i]) {
						t.Errorf("log line %d = %s, want it to match %s", i, lines[i], want)
					}
				}
			}
		})
	}
}

func TestAPIServerWaitStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w := APIServerWait{
		Ping: func(context.Context) error {
			return fmt.Errorf("dial tcp 10.96.0.1:443: connect: network is unreachable")
		},
		Host:    "https://10.96.0.1:443",
		Timeout: time.Minute,
		Log:     logr.Discard(),
	}
	start := time.Now()
	err := w.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Fatalf("err = %v, want the context's", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("returned after %s, want soon after the context ended", elapsed)
	}
}
