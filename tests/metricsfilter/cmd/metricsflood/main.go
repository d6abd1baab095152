// Command metricsflood sends the manager's metrics port what a hostile pod would, or scrapes it as
// Prometheus does, and prints what it got every few seconds (docs/security.md, "The metrics port
// flooded from a pod"). It is built static and run in a pod of a real cluster:
//
//	metricsflood -mode methods -url https://<service>:8443/metrics [-method-bytes 1048576] [-workers 8] [-duration 5m]
//	metricsflood -mode tokens  -url https://<service>:8443/metrics [-workers 8] [-duration 5m]
//	metricsflood -mode scrape  -url https://<service>:8443/metrics -token-file /token/token [-interval 2s]
//
// methods sends GETs whose method is -method-bytes long (Go's server reads a method of up to
// 1 MiB); tokens sends GETs each with a new made-up bearer token of about 1 KiB; scrape sends a GET
// with the token read from -token-file before each request (a mounted Secret the kubelet updates:
// a rotated token), and prints each answer with the token's digest and the manager's own heap and
// resident memory read from the scrape.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	mode := flag.String("mode", "", "methods, tokens or scrape")
	url := flag.String("url", "", "The metrics URL, e.g. https://po-platform-operators-metrics.platform-operators:8443/metrics")
	workers := flag.Int("workers", 8, "Requests in flight at once (methods, tokens).")
	duration := flag.Duration("duration", 5*time.Minute, "How long to run.")
	methodBytes := flag.Int("method-bytes", 1<<20, "Length of the method (methods).")
	tokenFile := flag.String("token-file", "", "Bearer token file, read before each scrape (scrape).")
	interval := flag.Duration("interval", 2*time.Second, "Time between scrapes (scrape); between reports (methods, tokens: 10 s).")
	flag.Parse()
	if *url == "" {
		fail("-url is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			// The manager's certificate is self-signed, made at start.
			TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
			MaxIdleConnsPerHost: *workers,
			ForceAttemptHTTP2:   false,
		},
	}
	switch *mode {
	case "methods":
		method := strings.Repeat("X", *methodBytes)
		flood(ctx, client, *url, *workers, func() *http.Request {
			req, err := http.NewRequest(method, *url, nil)
			if err != nil {
				fail(err.Error())
			}
			return req
		})
	case "tokens":
		flood(ctx, client, *url, *workers, func() *http.Request {
			req, err := http.NewRequest(http.MethodGet, *url, nil)
			if err != nil {
				fail(err.Error())
			}
			req.Header.Set("Authorization", "Bearer "+madeUpToken())
			return req
		})
	case "scrape":
		if *tokenFile == "" {
			fail("-token-file is required with -mode scrape")
		}
		scrape(ctx, client, *url, *tokenFile, *interval)
	default:
		fail("-mode must be methods, tokens or scrape")
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "metricsflood:", msg)
	os.Exit(2)
}

// madeUpToken looks like a service account token (three base64 parts, about 1 KiB) and is
// accepted by nobody.
func madeUpToken() string {
	b := make([]byte, 720)
	_, _ = rand.Read(b)
	s := base64.RawURLEncoding.EncodeToString(b)
	return "eyJhbGciOiJSUzI1NiJ9." + s[:700] + "." + s[700:]
}

// flood keeps workers requests in flight until ctx ends and prints, every 10 s and at the end,
// the requests answered in the window, their rate and the answers by status.
func flood(ctx context.Context, client *http.Client, url string, workers int, next func() *http.Request) {
	var mu sync.Mutex
	window, total := map[string]int{}, map[string]int{}
	count := func(key string) {
		mu.Lock()
		window[key]++
		total[key]++
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := client.Do(next().WithContext(ctx))
				if err != nil {
					if ctx.Err() == nil {
						count("error")
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				count(fmt.Sprint(resp.StatusCode))
			}
		}()
	}
	start, last := time.Now(), time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	report := func(final bool) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		counts, since := window, last
		if final {
			counts, since = total, start
		}
		n := 0
		for _, c := range counts {
			n += c
		}
		label := "window"
		if final {
			label = "total"
		}
		fmt.Printf("%s %s %d requests in %.1fs (%.1f/s) %s\n", now.UTC().Format(time.RFC3339), label, n,
			now.Sub(since).Seconds(), float64(n)/now.Sub(since).Seconds(), byKey(counts))
		window, last = map[string]int{}, now
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			report(true)
			return
		case <-tick.C:
			report(false)
		}
	}
}

func byKey(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// scrape GETs url with the token in tokenFile every interval and prints each answer, the token's
// digest (a rotated token shows a new one) and the manager's heap and resident memory.
func scrape(ctx context.Context, client *http.Client, url, tokenFile string, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		token, err := os.ReadFile(tokenFile)
		if err != nil {
			fail(err.Error())
		}
		sum := sha256.Sum256([]byte(strings.TrimSpace(string(token))))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			fail(err.Error())
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		t0 := time.Now()
		line := fmt.Sprintf("%s token=%s", t0.UTC().Format(time.RFC3339), hex.EncodeToString(sum[:4]))
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fmt.Printf("%s error %v\n", line, err)
		} else {
			heap, rss := "-", "-"
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_alloc_bytes "); ok {
					heap = v
				}
				if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
					rss = v
				}
			}
			_ = resp.Body.Close()
			fmt.Printf("%s status=%d latency=%s heap_alloc=%s rss=%s\n", line, resp.StatusCode,
				time.Since(t0).Round(time.Millisecond), heap, rss)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
