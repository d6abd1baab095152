package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/platform-operators/platform-operators/controller/tenantconfig"
)

// A command of the binary: the manager itself (no name) or a subcommand, `manager <name> ...`.
// Every command behaves alike on the command line, as Go's flag package and kubectl users expect:
//   - -h, -help and --help (any flag may be given with one dash or two) print the command's usage
//     to stdout, and the process exits 0;
//   - a usage error (an unknown flag, a bad value, a missing or extra argument) prints "error: ..."
//     and a one-line hint to stderr, and the process exits 2, as flag.ExitOnError does;
//   - any other error prints "error: ..." to stderr and exits 1.
//
// TestEveryCommandBehavesAlike runs each command of this table with each help form and a usage
// error.
type command struct {
	name string
	run  func(args []string, stdout, stderr io.Writer) error
}

// commands are the subcommands; anything else is the manager's own flags (run).
var commands = []command{
	{name: "kubeconfig", run: kubeconfigCommand}, // print a kubeconfig for a tenant's ServiceAccount
	{name: "schedule", run: scheduleCommand},     // print when a schedule runs
	{name: "probe", run: runProbe},               // ask a URL until it answers 200 (helm test)
}

// dispatch runs the command args name and returns the process's exit code.
func dispatch(args []string, stdout, stderr io.Writer) int {
	name, runCommand := "manager", run
	if i := slices.IndexFunc(commands, func(c command) bool { return len(args) > 0 && args[0] == c.name }); i >= 0 {
		name, runCommand, args = "manager "+commands[i].name, commands[i].run, args[1:]
	}
	err := runCommand(args, stdout, stderr)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "error:", err)
	var u usageError
	if errors.As(err, &u) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", name)
		return 2
	}
	return 1
}

// usageError is a command line the command cannot parse or accept (exit code 2).
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// usagef is a usageError with a formatted message.
func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// parseCommandLine parses args into fs as every command does: flag.ErrHelp, after writing the usage
// (header, then every flag) to stdout, for a help flag; a usageError for anything fs refuses.
// Nothing is printed by the flag package itself: the error is said once, by dispatch.
func parseCommandLine(fs *flag.FlagSet, header string, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	return commandLineError(fs.Parse(args), fs, header, stdout)
}

// commandLineError turns an error of fs.Parse into what parseCommandLine returns.
func commandLineError(err error, fs *flag.FlagSet, header string, stdout io.Writer) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		writeUsage(stdout, header, fs)
		return err
	default:
		return usageError{err}
	}
}

// writeUsage prints header and every flag of fs, with its default, to w: the same layout, flags
// with two dashes, for every command.
func writeUsage(w io.Writer, header string, fs *flag.FlagSet) {
	fmt.Fprint(w, header)
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		if typ != "" {
			typ = " " + typ
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" {
			def = fmt.Sprintf(" (default %q)", f.DefValue)
		}
		fmt.Fprintf(w, "  --%s%s\n      %s%s\n", f.Name, typ, usage, def)
	})
}

// kubeconfigUsage opens `manager kubeconfig --help`.
const kubeconfigUsage = `Usage: manager kubeconfig --namespace NS --service-account SA [--from-secret NAME | --duration 1h] [flags]

Prints a kubeconfig whose only credential is a token of the ServiceAccount, read through the
Kubernetes API found from --kubeconfig and --context, else KUBECONFIG, else ~/.kube/config, else
the pod's ServiceAccount.

Flags:
`

// kubeconfigCommand runs `manager kubeconfig`: every flag error is a usage error; reading the
// token is not.
func kubeconfigCommand(args []string, stdout, _ io.Writer) error {
	var o tenantconfig.Options
	fs := tenantconfig.NewFlagSet(&o)
	if err := parseCommandLine(fs, kubeconfigUsage, args, stdout); err != nil {
		return err
	}
	if err := o.Validate(fs); err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return tenantconfig.Run(ctx, o, stdout)
}

// commandNames lists the subcommands, for an error naming an unknown one.
func commandNames() string {
	names := make([]string, 0, len(commands))
	for _, c := range commands {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}
