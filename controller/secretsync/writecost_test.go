package secretsync

import (
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// TestCopyWriteCost measures what the controller sends the API server to keep copies in step:
// write requests and request bytes to Secrets, per copy, for each kind of change. It is a
// measurement, not a check (docs/benchmarks.md, "Copy writes: server-side apply"), and runs only with COPY_WRITE_COST=1, which `make bench` sets (it prints the table);
// the same file, copied into a checkout of an older commit, measures that commit's writes. The
// source's own update by the test (a PUT) is left out.
func TestCopyWriteCost(t *testing.T) {
	if os.Getenv("COPY_WRITE_COST") == "" {
		t.Skip("a measurement: COPY_WRITE_COST=1 runs it, as make bench does (docs/benchmarks.md)")
	}
	const c, n = "writecost", 30
	src := namespace(t, c+"-src", nil)
	var targets []string
	for i := range n {
		targets = append(targets, targetNamespace(t, fmt.Sprintf("%s-%02d", c, i), c))
	}
	value := func(s string) []byte { return []byte(strings.Repeat(s, 512)) } // 512 B values
	source := createSecret(t, makeSecret(src, "creds", withData(map[string][]byte{"a": value("a"), "b": value("b"), "c": value("c")})))
	inStep := func(ns []string) {
		t.Helper()
		for _, target := range ns {
			eventually(t, "the copy in "+target, func() error { return isCopy(getSecret(t, target, "creds"), source, c, v1alpha1.DeletionPolicyDelete) })
		}
		idle(t)
	}
	var rows []string
	phase := func(name string, copies int, change func()) {
		t.Helper()
		before := secretWriteMetrics(t)
		change()
		inStep(targets)
		after := secretWriteMetrics(t)
		var reqs, bytes float64
		var verbs []string
		for k, v := range after {
			d := v - before[k]
			if d == 0 || k == "PUT" || k == "bytes update" {
				continue // the test's own update of the source
			}
			switch {
			case strings.HasPrefix(k, "bytes "):
				bytes += d
			default:
				reqs += d
				verbs = append(verbs, fmt.Sprintf("%s %v", k, d))
			}
		}
		rows = append(rows, fmt.Sprintf("| %s | %d | %.2f | %.0f | %s |", name, copies, reqs/float64(copies), bytes/float64(copies), strings.Join(sortedStrings(verbs), ", ")))
	}
	update := func(change func(*corev1.Secret)) func() {
		return func() {
			eventually(t, "updating the source", func() error {
				s := getSecret(t, src, "creds")
				change(s)
				if err := k8s.Update(ctx, s); err != nil {
					return err
				}
				source = s
				return nil
			})
		}
	}
	phase("create (SecretSync created)", n, func() { createSync(t, makeSync(c, src, c, sourceName("creds"))) })
	phase("source data changed (one value)", n, update(func(s *corev1.Secret) { s.Data["a"] = value("A") }))
	phase("source key removed (first time)", n, update(func(s *corev1.Secret) { delete(s.Data, "b") }))
	phase("source key removed (again)", n, update(func(s *corev1.Secret) { delete(s.Data, "c") }))
	phase("source key added", n, update(func(s *corev1.Secret) { s.Data["d"] = value("d") }))
	phase("tenant edits one copy's data (repair)", 1, func() {
		cp := getSecret(t, targets[0], "creds")
		before := cp.DeepCopy()
		cp.Data["a"] = []byte("tenant")
		if err := k8s.Patch(ctx, cp, client.MergeFrom(before), client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("\n| change | copies | write requests per copy | request bytes per copy | requests (verb resource: count) |\n|---|---|---|---|---|\n%s", strings.Join(rows, "\n"))
}

// secretWriteMetrics reads the API server's write requests to Secrets by verb ("VERB n") and
// their request body bytes ("bytes verb").
func secretWriteMetrics(t *testing.T) map[string]float64 {
	t.Helper()
	raw, err := apiserver.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the API server's metrics: %v", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		var name, rest string
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			name, rest = "requests", strings.TrimPrefix(line, "apiserver_request_total{")
		case strings.HasPrefix(line, "apiserver_request_body_size_bytes_sum{"):
			name, rest = "bytes", strings.TrimPrefix(line, "apiserver_request_body_size_bytes_sum{")
		default:
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				l[k] = strings.Trim(v, `"`)
			}
		}
		if l["resource"] != "secrets" || l["subresource"] != "" {
			continue
		}
		var f float64
		if _, err := fmt.Sscan(value, &f); err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		switch name {
		case "requests":
			switch l["verb"] {
			case "POST", "PUT", "PATCH", "APPLY", "DELETE":
				out[l["verb"]] += f
			}
		case "bytes":
			out["bytes "+l["verb"]] += f
		}
	}
	return out
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
