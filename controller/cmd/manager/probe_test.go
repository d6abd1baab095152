package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// readyzServer answers like the manager's /readyz: statuses[i] for the i-th request (the last one
// repeated), with controller-runtime's bodies; delay holds every answer back.
func readyzServer(t *testing.T, delay time.Duration, statuses ...int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(requests.Add(1))
		time.Sleep(delay)
		status := statuses[min(n, len(statuses))-1]
		if status == http.StatusOK {
			fmt.Fprint(w, "ok")
			return
		}
		w.WriteHeader(status)
		fmt.Fprint(w, "[+]ping ok\n[-]informers failed: reason withheld\nreadyz check failed\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

func TestProbe(t *testing.T) {
	fast := []string{"--interval=1ms"}
	cases := []struct {
		name       string
		statuses   []int
		delay      time.Duration
		refused    bool
		args       func(url string) []string
		wantErr    []string // substrings of the error; none means success
		wantStdout string
		wantReqs   int32
	}{
		{
			name: "a 200 succeeds at once and prints the status and body", statuses: []int{200},
			args:       func(u string) []string { return []string{u} },
			wantStdout: "200 OK: ok\n", wantReqs: 1,
		},
		{
			name: "a 500 then a 200 succeeds on the retry", statuses: []int{500, 200},
			args:       func(u string) []string { return append([]string{u, "--attempts=3"}, fast...) },
			wantStdout: "200 OK: ok\n", wantReqs: 2,
		},
		{
			name: "flags before the URL work as well as after it", statuses: []int{500, 200},
			args:       func(u string) []string { return []string{"--attempts", "2", "--interval", "1ms", u} },
			wantStdout: "200 OK: ok\n", wantReqs: 2,
		},
		{
			name: "an answer that is always 503 is an error naming the URL and the last answer", statuses: []int{503},
			args: func(u string) []string { return append([]string{u, "--attempts=3"}, fast...) },
			wantErr: []string{
				"manager not ready at http://127.0.0.1:", "/readyz after 3 attempts: 503 Service Unavailable: [+]ping ok; [-]informers failed: reason withheld; readyz check failed",
			},
			wantReqs: 3,
		},
		{
			name: "a refused connection is an error", refused: true,
			args:    func(u string) []string { return append([]string{u, "--attempts=2"}, fast...) },
			wantErr: []string{"manager not ready at http://127.0.0.1:", "after 2 attempts", "connection refused"},
		},
		{
			name: "an answer slower than --timeout is a failed attempt", statuses: []int{200}, delay: 200 * time.Millisecond,
			args:    func(u string) []string { return []string{u, "--timeout=20ms"} },
			wantErr: []string{"after 1 attempts", "Client.Timeout exceeded"}, wantReqs: 1,
		},
		{name: "no URL is a usage error", args: func(string) []string { return []string{"--attempts=2"} }, wantErr: []string{"manager probe needs a URL"}},
		{name: "two URLs are a usage error", args: func(u string) []string { return []string{u, u} }, wantErr: []string{"manager probe takes one URL"}},
		{name: "a URL without a scheme is refused", args: func(string) []string { return []string{"localhost:8081/readyz"} }, wantErr: []string{"is not an http or https URL"}},
		{name: "zero attempts are refused", args: func(u string) []string { return []string{u, "--attempts=0"} }, wantErr: []string{"--attempts and --timeout must be positive"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			statuses := tc.statuses
			if statuses == nil {
				statuses = []int{200}
			}
			srv, requests := readyzServer(t, tc.delay, statuses...)
			url := srv.URL + "/readyz"
			if tc.refused {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				url = "http://" + l.Addr().String() + "/readyz"
				_ = l.Close()
			}
			var stdout, stderr bytes.Buffer
			err := probe(context.Background(), tc.args(url), &stdout, &stderr)
			if len(tc.wantErr) == 0 && err != nil {
				t.Fatalf("err = %v, want none; stderr:\n%s", err, stderr.String())
			}
			if len(tc.wantErr) > 0 && err == nil {
				t.Fatalf("err = nil, want one containing %q; stdout %q", tc.wantErr, stdout.String())
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %q, want it to contain %q", err, want)
				}
			}
			if stdout.String() != tc.wantStdout {
				t.Errorf("stdout = %q, want %q", stdout.String(), tc.wantStdout)
			}
			if tc.wantReqs > 0 && requests.Load() != tc.wantReqs {
				t.Errorf("requests = %d, want %d", requests.Load(), tc.wantReqs)
			}
		})
	}
}

func TestProbeReportsEachFailedAttempt(t *testing.T) {
	srv, _ := readyzServer(t, 0, 500, 503, 200)
	var stdout, stderr bytes.Buffer
	if err := probe(context.Background(), []string{srv.URL, "--attempts=5", "--interval=1ms"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	want := "attempt 1/5: 500 Internal Server Error: [+]ping ok; [-]informers failed: reason withheld; readyz check failed\n" +
		"attempt 2/5: 503 Service Unavailable: [+]ping ok; [-]informers failed: reason withheld; readyz check failed\n"
	if stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
}

// A signal during the pause between attempts stops the probe at once; the error says so and
// keeps the last failure.
func TestProbeStopsWhenCancelledBetweenAttempts(t *testing.T) {
	srv, requests := readyzServer(t, 0, 503)
	ctx, cancel := context.WithCancel(context.Background())
	// Cancels once the probe has read and reported the first answer (its stderr line: the server
	// counting the request is too early, the answer may still be on its way), or after 30 s
	// (then the request count below fails).
	stderr := &firstWrite{wrote: make(chan struct{})}
	go func() {
		select {
		case <-stderr.wrote:
		case <-time.After(30 * time.Second):
		}
		cancel()
	}()
	var stdout bytes.Buffer
	start := time.Now()
	err := probe(ctx, []string{srv.URL, "--attempts=5", "--interval=1m"}, &stdout, stderr)
	if err == nil || !strings.Contains(err.Error(), "context canceled (last: 503 Service Unavailable") {
		t.Fatalf("err = %v, want the cancellation and the last answer", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the probe took %s after the cancel, want it to stop during the 1m pause", took)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

// firstWrite is a writer that says when it is first written to.
type firstWrite struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	wrote chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	w.once.Do(func() { close(w.wrote) })
	return n, err
}
