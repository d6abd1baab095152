package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// probeUsage opens `manager probe --help`.
const probeUsage = `Usage: manager probe URL [--timeout D] [--attempts N] [--interval D]

Asks URL (http or https) until it answers 200, and prints the answer. The manager image has no
shell and no wget: the chart's helm test pod runs this to ask the manager's /readyz.

Flags:
`

// runProbe runs `manager probe`, stopped by SIGINT or SIGTERM.
func runProbe(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return probe(ctx, args, stdout, stderr)
}

// probe GETs a URL up to --attempts times, --interval apart, each request bounded by --timeout.
// It prints each failed attempt to stderr and the answer (status and body, on one line) to
// stdout, and succeeds only on HTTP 200; the error names the URL and the last failure.
func probe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("manager probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	timeout := fs.Duration("timeout", 5*time.Second, "Timeout of one request.")
	attempts := fs.Int("attempts", 1, "Requests to make before giving up.")
	interval := fs.Duration("interval", time.Second, "Pause between two attempts.")
	positional, err := parseInterspersed(fs, args)
	if err := commandLineError(err, fs, probeUsage, stdout); err != nil {
		return err
	}
	switch {
	case len(positional) == 0:
		return usagef("manager probe needs a URL")
	case len(positional) > 1:
		return usagef("manager probe takes one URL, not %d: %q", len(positional), positional)
	}
	target := positional[0]
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("manager probe: %q is not an http or https URL", target)
	}
	if *attempts < 1 || *timeout <= 0 || *interval < 0 {
		return usagef("manager probe: --attempts and --timeout must be positive, --interval not negative")
	}

	transport := http.DefaultTransport.(*http.Transport).Clone()
	// The probe asks in-cluster addresses (a Service): a proxy from the environment would only
	// stand in the way.
	transport.Proxy = nil
	client := &http.Client{Timeout: *timeout, Transport: transport}
	var last error
	attempt := 0
	// A Backoff without Factor pauses Duration between attempts; Steps counts the attempts.
	err = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: *interval, Steps: *attempts}, func(ctx context.Context) (bool, error) {
		attempt++
		answer, err := get(ctx, client, target)
		if err != nil {
			last = err
			fmt.Fprintf(stderr, "attempt %d/%d: %v\n", attempt, *attempts, err)
			return false, nil
		}
		fmt.Fprintln(stdout, answer)
		return true, nil
	})
	switch {
	case err == nil:
		return nil
	case attempt == *attempts:
		return fmt.Errorf("manager not ready at %s after %d attempts: %w", target, *attempts, last)
	case last == nil:
		// ctx ended before the first attempt.
		return fmt.Errorf("manager not ready at %s: %w", target, ctx.Err())
	default:
		return fmt.Errorf("manager not ready at %s: %w (last: %w)", target, ctx.Err(), last)
	}
}

// get makes one request and returns "<status>: <body>" on 200, or an error holding the same
// for any other status.
func get(ctx context.Context, client *http.Client, target string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", fmt.Errorf("%s: reading the body: %w", resp.Status, err)
	}
	answer := resp.Status
	if line := oneLine(string(body)); line != "" {
		answer += ": " + line
	}
	if resp.StatusCode != http.StatusOK {
		return "", errors.New(answer)
	}
	return answer, nil
}

// oneLine joins the non-empty lines of s with "; " (a failed /readyz lists one check per line).
func oneLine(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// parseInterspersed parses flags before and after positional arguments (the flag package stops
// at the first one) and returns the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
