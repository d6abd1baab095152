package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// managerDoc is the flag reference generated from the FlagSet (TestManagerDocIsCurrent).
const managerDoc = "../../../docs/manager.md"

func usageText() string {
	var o options
	var b bytes.Buffer
	writeUsage(&b, newFlagSet(&o))
	return b.String()
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	var o options
	fs := newFlagSet(&o)
	help := usageText()
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if strings.TrimSpace(f.Usage) == "" {
			t.Errorf("--%s has no usage text", f.Name)
		}
		if !strings.Contains(help, "\n  --"+f.Name+" ") && !strings.Contains(help, "\n  --"+f.Name+"\n") {
			t.Errorf("--help does not list --%s", f.Name)
		}
	})
	if n < 30 {
		t.Errorf("only %d flags registered: the FlagSet lost some", n)
	}
	for _, want := range []string{"manager kubeconfig", "manager schedule", "manager probe", "KUBECONFIG", `(default ":8080")`} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
}

func TestCommandLineErrors(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		wantHelp  bool
		wantUsage string // a usageError (exit 2) containing this
	}{
		{args: []string{"--help"}, wantHelp: true},
		{args: []string{"-h"}, wantHelp: true},
		{args: []string{"--no-such-flag"}, wantUsage: "flag provided but not defined: -no-such-flag"},
		{args: []string{"--kube-api-qps=fast"}, wantUsage: `invalid value "fast" for flag -kube-api-qps`},
		{args: []string{"extra"}, wantUsage: `unexpected arguments: ["extra"]`},
		{args: []string{"--scheduledjob-workers=0"}, wantUsage: "--scheduledjob-workers must be at least 1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout := os.Stdout
			r, w, _ := os.Pipe()
			os.Stdout = w
			_, err := parseFlags(tc.args)
			w.Close()
			os.Stdout = stdout
			var out bytes.Buffer
			_, _ = out.ReadFrom(r)
			if tc.wantHelp {
				if !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(out.String(), usageHeader) {
					t.Fatalf("err = %v, stdout %.80q; want ErrHelp and the usage on stdout", err, out.String())
				}
				if run(tc.args) != nil {
					t.Error("run(--help) returned an error: the exit code would not be 0")
				}
				return
			}
			var u usageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.wantUsage) {
				t.Fatalf("err = %v, want a usage error containing %q", err, tc.wantUsage)
			}
		})
	}
}

func TestRestConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, server string) string {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
		cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		cfg.CurrentContext = "x"
		p := filepath.Join(dir, name)
		if err := clientcmd.WriteToFile(*cfg, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flagFile := write("flag", "https://flag.example:6443")
	envFile := write("env", "https://env.example:6443")
	t.Setenv("KUBECONFIG", envFile)

	if cfg, err := restConfig(flagFile); err != nil || cfg.Host != "https://flag.example:6443" || cfg.BearerToken != "t" {
		t.Errorf("--kubeconfig: host %v, err %v; want the flag's file over KUBECONFIG", cfg, err)
	}
	if cfg, err := restConfig(""); err != nil || cfg.Host != "https://env.example:6443" {
		t.Errorf("no flag: %v, %v; want KUBECONFIG's server", cfg, err)
	}
	if _, err := restConfig(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "--kubeconfig") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: err = %v, want a clear --kubeconfig error", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad"), []byte("not: [a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := restConfig(filepath.Join(dir, "bad")); err == nil {
		t.Error("a broken kubeconfig was accepted")
	}
}

// TestManagerDocIsCurrent keeps docs/manager.md equal to what --help prints. Regenerate with
// UPDATE_DOCS=1 go test -run TestManagerDocIsCurrent ./controller/cmd/manager/
func TestManagerDocIsCurrent(t *testing.T) {
	want := "# manager command line\n\n<!-- Generated from the manager's FlagSet by TestManagerDocIsCurrent (controller/cmd/manager/usage_test.go):\n" +
		"     UPDATE_DOCS=1 go test -run TestManagerDocIsCurrent ./controller/cmd/manager/ -->\n\n" +
		"The chart sets these flags from its values (docs/chart.md); `extraArgs` adds any other.\n\n```text\n$ manager --help\n" + usageText() + "```\n"
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(managerDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(managerDoc)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("docs/manager.md is not what --help prints: run UPDATE_DOCS=1 go test -run TestManagerDocIsCurrent ./controller/cmd/manager/")
	}
}
