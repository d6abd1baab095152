package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/platform-operators/platform-operators/controller/tenantconfig"
)

// managerDoc is the flag reference generated from the FlagSet (TestManagerDocIsCurrent).
const managerDoc = "../../../docs/manager.md"

func usageText() string {
	var o options
	var b bytes.Buffer
	writeUsage(&b, usageHeader, newFlagSet(&o))
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
		wantUsage string // a usageError (exit 2) containing this
	}{
		{args: []string{"--no-such-flag"}, wantUsage: "flag provided but not defined: -no-such-flag"},
		{args: []string{"--kube-api-qps=fast"}, wantUsage: `invalid value "fast" for flag -kube-api-qps`},
		{args: []string{"extra"}, wantUsage: `unknown command "extra" (commands: kubeconfig, schedule, probe)`},
		{args: []string{"--leader-elect=false", "extra"}, wantUsage: `unexpected arguments: ["extra"]`},
		{args: []string{"--scheduledjob-workers=0"}, wantUsage: "--scheduledjob-workers must be at least 1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := parseFlags(tc.args)
			var u usageError
			if !errors.As(err, &u) || !strings.Contains(err.Error(), tc.wantUsage) {
				t.Fatalf("err = %v, want a usage error containing %q", err, tc.wantUsage)
			}
		})
	}
}

// TestEveryCommandBehavesAlike runs the binary's entry point (what main calls, with the process's
// arguments and output injected) for the manager and each subcommand: every help form prints the
// command's own usage to stdout, nothing to stderr, and exits 0; a usage error of each kind (an
// unknown flag, a bad value, a missing argument) exits 2 with the error and a one-line hint naming
// the command's --help on stderr, and nothing on stdout. None of these reaches a cluster.
func TestEveryCommandBehavesAlike(t *testing.T) {
	type usageCase struct {
		what string
		args []string
		want string // in the error line
	}
	for _, c := range []struct {
		name   string // "" is the manager itself
		usage  string // what its help starts with
		errors []usageCase
	}{
		{name: "", usage: usageHeader, errors: []usageCase{
			{"an unknown flag", []string{"--no-such-flag"}, "flag provided but not defined"},
			{"a bad value", []string{"--log-level=loud"}, "--log-level must be"},
			{"a bad controller", []string{"--controllers=nosuch"}, "nosuch"},
			{"a namespace list naming none", []string{"--watch-namespaces=,"}, "names no namespace"},
			{"a name that is not a namespace's", []string{"--podwatcher-namespaces=a,B"}, `"B", which is not a namespace name`},
			{"an unknown command", []string{"kubeconfg"}, `unknown command "kubeconfg"`},
		}},
		{name: "kubeconfig", usage: kubeconfigUsage, errors: []usageCase{
			{"an unknown flag", []string{"--namespace=a", "--service-account=b", "--no-such-flag"}, "flag provided but not defined"},
			{"a bad value", []string{"--namespace=a", "--service-account=b", "--duration=25h"}, "--duration must be at most 24h"},
			{"a missing argument", []string{"--namespace=a"}, "--namespace and --service-account are required"},
		}},
		{name: "schedule", usage: scheduleUsage, errors: []usageCase{
			{"an unknown flag", []string{"--schedule=@daily", "--timezone=UTC"}, "flag provided but not defined"},
			{"a bad value", []string{"--schedule=0 25 * * *"}, "unparseable schedule"},
			{"a missing argument", nil, "--schedule is required"},
		}},
		{name: "probe", usage: probeUsage, errors: []usageCase{
			{"an unknown flag", []string{"http://127.0.0.1:1/readyz", "--no-such-flag"}, "flag provided but not defined"},
			{"a bad value", []string{"http://127.0.0.1:1/readyz", "--attempts=many"}, `invalid value "many" for flag -attempts`},
			{"a missing argument", nil, "manager probe needs a URL"},
			{"an extra argument", []string{"http://127.0.0.1:1/a", "http://127.0.0.1:1/b"}, "manager probe takes one URL, not 2"},
		}},
	} {
		command := strings.TrimSpace("manager " + c.name)
		prefix := []string{}
		if c.name != "" {
			prefix = []string{c.name}
		}
		for _, help := range []string{"-h", "-help", "--help", "--h"} {
			t.Run(command+" "+help, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				if code := dispatch(append(slices.Clone(prefix), help), &stdout, &stderr); code != 0 {
					t.Errorf("exit code %d, want 0", code)
				}
				if !strings.HasPrefix(stdout.String(), c.usage) || !strings.Contains(stdout.String(), "\n  --") {
					t.Errorf("stdout %.120q, want the usage of %s with its flags", stdout.String(), command)
				}
				if stderr.Len() != 0 {
					t.Errorf("stderr %q, want nothing", stderr.String())
				}
			})
		}
		for _, u := range c.errors {
			t.Run(command+" with "+u.what, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				if code := dispatch(append(slices.Clone(prefix), u.args...), &stdout, &stderr); code != 2 {
					t.Errorf("exit code %d, want 2 (a usage error)", code)
				}
				lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
				hint := "Run '" + command + " --help' for usage."
				if len(lines) != 2 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], u.want) || lines[1] != hint {
					t.Errorf("stderr:\n%s\nwant two lines: \"error: ...%s...\" and %q", stderr.String(), u.want, hint)
				}
				if stdout.Len() != 0 {
					t.Errorf("stdout %q, want nothing", stdout.String())
				}
			})
		}
	}
}

// TestKubeConnectionFlagsAreTheSame: every command that talks to the Kubernetes API takes the same
// connection flags, so a user's `--kubeconfig x --context y` works on each.
func TestKubeConnectionFlagsAreTheSame(t *testing.T) {
	var o options
	var k tenantconfig.Options
	for _, fs := range []*flag.FlagSet{newFlagSet(&o), tenantconfig.NewFlagSet(&k)} {
		for _, name := range []string{"kubeconfig", "context"} {
			if fs.Lookup(name) == nil {
				t.Errorf("manager %s has no --%s", fs.Name(), name)
			}
		}
	}
}

func TestRestConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, server string) string {
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
		cfg.Clusters["other"] = &clientcmdapi.Cluster{Server: server + "0"}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
		cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		cfg.Contexts["y"] = &clientcmdapi.Context{Cluster: "other", AuthInfo: "u"}
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

	if cfg, err := restConfig(flagFile, ""); err != nil || cfg.Host != "https://flag.example:6443" || cfg.BearerToken != "t" {
		t.Errorf("--kubeconfig: host %v, err %v; want the flag's file over KUBECONFIG", cfg, err)
	}
	if cfg, err := restConfig("", ""); err != nil || cfg.Host != "https://env.example:6443" {
		t.Errorf("no flag: %v, %v; want KUBECONFIG's server", cfg, err)
	}
	if cfg, err := restConfig(flagFile, "y"); err != nil || cfg.Host != "https://flag.example:64430" {
		t.Errorf("--kubeconfig and --context y: %v, %v; want the server of context y in the flag's file", cfg, err)
	}
	if cfg, err := restConfig("", "y"); err != nil || cfg.Host != "https://env.example:64430" {
		t.Errorf("--context y alone: %v, %v; want the server of context y in KUBECONFIG's file", cfg, err)
	}
	if _, err := restConfig(flagFile, "nosuch"); err == nil || !strings.Contains(err.Error(), `--context "nosuch": no such context`) || !strings.Contains(err.Error(), "x, y") {
		t.Errorf("unknown context: err = %v, want one naming it and the contexts there are", err)
	}
	if _, err := restConfig(filepath.Join(dir, "missing"), ""); err == nil || !strings.Contains(err.Error(), "--kubeconfig") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: err = %v, want a clear --kubeconfig error", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad"), []byte("not: [a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := restConfig(filepath.Join(dir, "bad"), ""); err == nil {
		t.Error("a broken kubeconfig was accepted")
	}
}

// TestManagerDocIsCurrent keeps docs/manager.md equal to what --help prints. Regenerate with
// UPDATE_DOCS=1 go test -run TestManagerDocIsCurrent ./controller/cmd/manager/
func TestManagerDocIsCurrent(t *testing.T) {
	want := "# manager command line\n\n<!-- Generated from the manager's FlagSet by TestManagerDocIsCurrent (controller/cmd/manager/usage_test.go):\n" +
		"     UPDATE_DOCS=1 go test -run TestManagerDocIsCurrent ./controller/cmd/manager/ -->\n\n" +
		"The chart sets these flags from its values (docs/chart.md); `extraArgs` adds any other.\n\n" +
		"Every command below behaves alike: `-h`, `-help` and `--help` print its usage to stdout and exit 0 (any flag takes\n" +
		"one dash or two); a usage error (an unknown flag, a bad value, a missing or extra argument) prints `error: ...` and\n" +
		"`Run 'manager <command> --help' for usage.` to stderr and exits 2; any other failure exits 1.\n\n```text\n$ manager --help\n" + usageText() + "```\n"
	for _, c := range commands {
		var b bytes.Buffer
		if code := dispatch([]string{c.name, "--help"}, &b, io.Discard); code != 0 {
			t.Fatalf("manager %s --help: exit code %d", c.name, code)
		}
		want += "\n## manager " + c.name + "\n\n```text\n$ manager " + c.name + " --help\n" + b.String() + "```\n"
	}
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
