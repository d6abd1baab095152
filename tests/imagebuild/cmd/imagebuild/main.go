// Command imagebuild assembles images from static binaries without a container daemon and writes
// them as a `docker save` tarball (--tar) and/or pushes them (--push):
//
//	imagebuild [manager] --binary bin/manager-linux-amd64 [--binary bin/manager-linux-arm64] \
//	    --version V --revision R --tag REF [--tar FILE [--tar-platform linux/amd64]] [--oci-layout DIR] [--push [--insecure]]
//	imagebuild busybox --binary PATH --tag REF [--tar FILE] [--push [--insecure]]
//
// The manager image is an OCI index with one image per --binary; --tar holds one platform's image
// (default: this machine's), --oci-layout and --push the whole index. `make image-tar` and
// `make image-push` run the manager form; the busybox form builds the e2e suite's job image.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/platform-operators/platform-operators/tests/imagebuild"
)

const source = "https://github.com/platform-operators/platform-operators"

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	// -h printed the usage: that is no failure.
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// run dispatches on the first argument: "busybox", "manager", or a flag (the manager, as
// `make image-tar` has always called it).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "manager":
			return runManager(args[1:], stdout, stderr)
		case "busybox":
			return runBusybox(ctx, args[1:], stdout, stderr)
		}
		return fmt.Errorf("unknown command %q: want manager or busybox", args[0])
	}
	return runManager(args, stdout, stderr)
}

// output is where an image goes: the flags every command shares.
type output struct {
	tag, tarPath   string
	push, insecure bool
}

func (o *output) register(fs *flag.FlagSet, defaultTag string) {
	fs.StringVar(&o.tag, "tag", defaultTag, "Image reference: the tarball's tag, and where --push pushes.")
	fs.StringVar(&o.tarPath, "tar", "", "Write the image here as a `docker save` tarball (docker load, kind load image-archive).")
	fs.BoolVar(&o.push, "push", false, "Push to --tag (credentials from $DOCKER_CONFIG/config.json or ~/.docker/config.json).")
	fs.BoolVar(&o.insecure, "insecure", false, "Allow a plain-HTTP registry.")
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return nil
}

func runManager(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("imagebuild manager", flag.ContinueOnError)
	fs.SetOutput(stderr)
	m := imagebuild.Manager{Source: source}
	var out output
	var layoutDir, tarPlatform string
	fs.Func("binary", "Static linux manager binary; repeat for each platform (read from its ELF header). Required.", func(s string) error {
		m.Binaries = append(m.Binaries, s)
		return nil
	})
	fs.StringVar(&m.Version, "version", "v0.0.0-dev", "Version (OCI label).")
	fs.StringVar(&m.Revision, "revision", "unknown", "Source revision (OCI label).")
	fs.StringVar(&m.Source, "source", source, "Source repository (OCI label).")
	out.register(fs, "platform-operators/manager:dev")
	fs.StringVar(&tarPlatform, "tar-platform", imagebuild.HostPlatform().String(), "Platform whose image --tar writes (a `docker save` tarball holds one).")
	fs.StringVar(&layoutDir, "oci-layout", "", "Write the whole index into this directory as an OCI image layout.")
	if err := parse(fs, args); err != nil {
		return err
	}
	if len(m.Binaries) == 0 {
		return errors.New("give --binary (once per platform)")
	}
	if out.tarPath == "" && layoutDir == "" && !out.push {
		return errors.New("nothing to do: give --tar, --oci-layout and/or --push")
	}
	p, err := imagebuild.ParsePlatform(tarPlatform)
	if err != nil {
		return fmt.Errorf("--tar-platform: %w", err)
	}
	idx, err := m.Index()
	if err != nil {
		return err
	}
	if out.tarPath != "" {
		img, err := imagebuild.ImageFor(idx, p)
		if err != nil {
			return fmt.Errorf("--tar: %w", err)
		}
		if err := imagebuild.WriteTarball(out.tarPath, out.tag, img); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s (%s, %s)\n", out.tarPath, out.tag, p)
	}
	if layoutDir != "" {
		if err := imagebuild.WriteLayout(layoutDir, out.tag, idx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote OCI layout %s (%s)\n", layoutDir, out.tag)
	}
	if out.push {
		d, err := imagebuild.Push(out.tag, idx, out.insecure)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s\n", d)
	}
	return nil
}

func runBusybox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("imagebuild busybox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	b := imagebuild.Busybox{Source: source}
	var out output
	var applets string
	fs.StringVar(&b.Binary, "binary", "", "Static busybox binary, e.g. bin/busybox from Debian's busybox-static. Required.")
	fs.StringVar(&applets, "applets", "", "Applets to link, comma-separated (default: what `busybox --list` prints, run here).")
	fs.StringVar(&b.Version, "version", "", "Busybox version (OCI label; default: what busybox prints, run here).")
	fs.StringVar(&b.Revision, "revision", "unknown", "Source revision of this repository (OCI label).")
	out.register(fs, "platform-operators/busybox:dev")
	if err := parse(fs, args); err != nil {
		return err
	}
	if b.Binary == "" {
		return errors.New("give --binary")
	}
	if out.tarPath == "" && !out.push {
		return errors.New("nothing to do: give --tar and/or --push")
	}
	var err error
	if applets != "" {
		b.Applets = strings.Split(applets, ",")
	} else if b.Applets, err = imagebuild.Applets(ctx, b.Binary); err != nil {
		return fmt.Errorf("%w (a binary that cannot run here needs --applets and --version)", err)
	}
	if b.Version == "" {
		if b.Version, err = imagebuild.BusyboxVersion(ctx, b.Binary); err != nil {
			return fmt.Errorf("%w (a binary that cannot run here needs --applets and --version)", err)
		}
	}
	img, err := b.Image()
	if err != nil {
		return err
	}
	if out.tarPath != "" {
		if err := imagebuild.WriteTarball(out.tarPath, out.tag, img); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s (%s, busybox %s, %d applets)\n", out.tarPath, out.tag, b.Version, len(b.Applets))
	}
	if out.push {
		d, err := imagebuild.Push(out.tag, img, out.insecure)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s\n", d)
	}
	return nil
}
