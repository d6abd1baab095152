// Command imagebuild assembles the manager image from a static binary without a container daemon
// and writes it as a tarball (--tar) and/or pushes it (--push). `make image-tar` and
// `make image-push` run it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/platform-operators/platform-operators/tests/imagebuild"
)

func main() {
	var o imagebuild.Options
	var tag, tarPath string
	var push, insecure bool
	flag.StringVar(&o.Binary, "binary", "bin/manager-linux-amd64", "Static linux manager binary.")
	flag.StringVar(&o.Arch, "arch", "amd64", "Architecture of the binary.")
	flag.StringVar(&o.Version, "version", "v0.0.0-dev", "Version (OCI label).")
	flag.StringVar(&o.Revision, "revision", "unknown", "Source revision (OCI label).")
	flag.StringVar(&o.Source, "source", "https://github.com/platform-operators/platform-operators", "Source repository (OCI label).")
	flag.StringVar(&tag, "tag", "platform-operators/manager:dev", "Image reference: the tarball's tag, and where --push pushes.")
	flag.StringVar(&tarPath, "tar", "", "Write the image here as a `docker save` tarball (for kind load image-archive).")
	flag.BoolVar(&push, "push", false, "Push the image to --tag (credentials from ~/.docker/config.json).")
	flag.BoolVar(&insecure, "insecure", false, "Allow a plain-HTTP registry.")
	flag.Parse()
	if err := run(o, tag, tarPath, push, insecure); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(o imagebuild.Options, tag, tarPath string, push, insecure bool) error {
	if tarPath == "" && !push {
		return fmt.Errorf("nothing to do: give --tar and/or --push")
	}
	img, err := imagebuild.Build(o)
	if err != nil {
		return err
	}
	if tarPath != "" {
		if err := imagebuild.WriteTarball(tarPath, tag, img); err != nil {
			return err
		}
		fmt.Printf("wrote %s (%s)\n", tarPath, tag)
	}
	if push {
		d, err := imagebuild.Push(tag, img, insecure)
		if err != nil {
			return err
		}
		fmt.Printf("pushed %s\n", d)
	}
	return nil
}
