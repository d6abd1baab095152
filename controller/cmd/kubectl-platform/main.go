// Command kubectl-platform is the workstation command of platform-operators, a kubectl plugin:
// on PATH, `kubectl platform <command>` runs it. It asks a ScheduledJob for a run now, lists the
// next slots of a ScheduledJob or of a schedule in a time zone (DST nights marked, as the
// controller's own schedule code decides them), prints the last runs, and says why a SecretSync's
// copy in a namespace is missing or out of step. It takes kubectl's connection flags
// (--kubeconfig, --context, -n, ...) and prints tables, or -o json|yaml. docs/cli.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/platform-operators/platform-operators/controller/api/v1alpha1"
)

// Exit codes: 0 done, 1 the command failed (the API said no, an object is missing), 2 the
// command line is wrong.
const (
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, time.Now))
}

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, out, errOut io.Writer, now func() time.Time) int {
	root := newRoot(out, errOut, now)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		// An error can quote the API server, which can quote what a client wrote.
		fmt.Fprintln(errOut, "error:", safeText(err.Error(), 4*maxFieldBytes))
		var u usageError
		if errors.As(err, &u) {
			return exitUsage
		}
		return exitFailed
	}
	return 0
}

// usageError is a wrong command line: exit code 2.
type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// cli holds what every command shares: the connection flags, the output format, the clock.
type cli struct {
	flags  *genericclioptions.ConfigFlags
	output string
	out    io.Writer
	errOut io.Writer
	now    func() time.Time
}

func newRoot(out, errOut io.Writer, now func() time.Time) *cobra.Command {
	c := &cli{flags: genericclioptions.NewConfigFlags(true), out: out, errOut: errOut, now: now}
	root := &cobra.Command{
		Use:   "kubectl-platform",
		Short: "Ask platform-operators' ScheduledJobs and SecretSyncs what they will do and why",
		Long: `kubectl platform: run a ScheduledJob now, list its next slots (DST nights marked) and its
last runs, and say why a SecretSync's copy in a namespace is missing or out of step.

Installed on PATH as kubectl-platform, it is the kubectl plugin "kubectl platform".`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if c.output != "" && c.output != "json" && c.output != "yaml" {
				return usagef("--output %q: use json or yaml (default: a table)", c.output)
			}
			return nil
		},
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	c.flags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVarP(&c.output, "output", "o", "", "Output format: json or yaml (default: a table).")
	root.AddCommand(c.runNowCmd(), c.nextCmd(), c.runsCmd(), c.whyCmd(), c.versionCmd())
	return root
}

// args checks the number of positional arguments, as a usage error.
func args(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, a []string) error {
		if len(a) != n {
			return usagef("expected %s, got %d arguments", what, len(a))
		}
		return nil
	}
}

// clientIn is a client of the cluster the flags name, knowing the add-on's kinds, and the
// namespace: -n, else the kubeconfig context's namespace, else default.
func (c *cli) clientIn() (client.Client, string, error) {
	cfg, err := c.flags.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	scheme := k8sruntime.NewScheme()
	add := k8sruntime.NewSchemeBuilder(clientgoscheme.AddToScheme, v1alpha1.AddToScheme)
	if err := add.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", err
	}
	ns, _, err := c.flags.ToRawKubeConfigLoader().Namespace()
	return cl, ns, err
}

// namespaceSet reports whether -n was given.
func (c *cli) namespaceSet() bool { return c.flags.Namespace != nil && *c.flags.Namespace != "" }

// printReport writes v as -o asks: JSON (indented as kubectl does) or YAML; a table (by table)
// otherwise. Every format gets v with its strings made safe to print (safeCopy): the table
// function is handed that copy, never the value read from the cluster.
func printReport[T any](c *cli, v T, table func(w io.Writer, v T)) error {
	v = safeCopy(v)
	switch c.output {
	case "json":
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(c.out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = c.out.Write(b)
		return err
	}
	w := printers.GetNewTabWriter(c.out)
	table(w, v)
	return w.Flush()
}

// warn writes a note for the human to stderr, so that -o json|yaml stays machine-readable.
func (c *cli) warn(format string, a ...any) {
	fmt.Fprintf(c.errOut, "warning: %s\n", safeText(fmt.Sprintf(format, a...), 4*maxFieldBytes))
}
