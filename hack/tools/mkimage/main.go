// Command mkimage builds a single-layer linux/amd64 OCI image from local files
// without Docker, then pushes it to a registry and/or writes it as an archive
// for `ctr images import`. Builds are deterministic: the same inputs give the
// same digest, which is printed on stdout.
//
// Examples:
//
//	mkimage --busybox /bin/busybox --cmd sh --push 127.0.0.1:5000/public/busybox:test
//	mkimage --file ./pause:/pause:0755 --entrypoint '["/pause"]' \
//	    --name 127.0.0.1:5000/public/pause:test --oci-archive pause.tar
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nodekruise/kruise/hack/tools/mkimage/imagebuild"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

const usageHead = `Usage: mkimage [flags]

Builds a single-layer linux/amd64 OCI image from local files, with fixed
timestamps (same inputs, same digest), and pushes it (--push) and/or writes it
as an archive (--oci-archive, --docker-archive). Prints the image digest on
stdout.

Examples:
  mkimage --busybox /bin/busybox --cmd sh --push 127.0.0.1:5000/public/busybox:test
  mkimage --file ./pause:/pause:0755 --entrypoint '["/pause"]' \
      --name 127.0.0.1:5000/public/pause:test --oci-archive /tmp/pause.tar

Flags:
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var files, symlinks, dirs, envs, labels listFlag
	fset.Var(&files, "file", "`SRC:DST[:MODE]` copy local file SRC to absolute path DST with octal MODE (default 0755 if SRC is executable, else 0644); repeatable")
	fset.Var(&symlinks, "symlink", "`LINK:TARGET` create symbolic link LINK pointing to TARGET; repeatable")
	fset.Var(&dirs, "dir", "`PATH[:MODE]` create directory PATH (default mode 0755); repeatable")
	fset.Var(&envs, "env", "`KEY=VALUE` environment variable of the image; repeatable (PATH defaults to the usual one)")
	fset.Var(&labels, "label", "`KEY=VALUE` image label; repeatable")
	busybox := fset.String("busybox", "", "`PATH` of a static busybox binary: installed as /bin/busybox with a symlink per applet (from --list-full, or --list into /bin); implies --base-files")
	baseFiles := fset.Bool("base-files", false, "add a minimal /etc/passwd and /etc/group (root, nobody), /tmp (1777) and /root")
	entrypoint := fset.String("entrypoint", "", "entrypoint: a JSON array like '[\"/pause\"]', or words separated by spaces")
	cmd := fset.String("cmd", "", "command (arguments to the entrypoint): a JSON array, or words separated by spaces")
	workdir := fset.String("workdir", "", "working directory of the image")
	user := fset.String("user", "", "user of the image (name or UID[:GID])")
	push := fset.String("push", "", "`REF` push the image to this reference (plain http for loopback registries)")
	ref := fset.String("name", "", "`REF` name recorded in archives; default the --push reference")
	ociArchive := fset.String("oci-archive", "", "`PATH` write a tar of an OCI layout for `ctr images import` (keeps the registry digest)")
	dockerArchive := fset.String("docker-archive", "", "`PATH` write a `docker save` style tar (ctr import gives it another digest)")
	insecure := fset.Bool("insecure", false, "use plain http for the registry of --push even if it is not a loopback address")
	username := fset.String("username", "", "registry user for --push (Basic credentials, also used for the token endpoint)")
	password := fset.String("password", "", "registry password for --push (default $MKIMAGE_PASSWORD)")
	timeout := fset.Duration("timeout", 5*time.Minute, "time limit for the push")
	fset.Usage = func() {
		fmt.Fprint(fset.Output(), usageHead)
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return err
	}
	if fset.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fset.Args())
	}

	spec := imagebuild.Spec{Busybox: *busybox, BaseFiles: *baseFiles, Env: envs, WorkingDir: *workdir, User: *user}
	for _, f := range files {
		parts := strings.Split(f, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			return fmt.Errorf("--file %q: want SRC:DST[:MODE]", f)
		}
		file := imagebuild.File{Src: parts[0], Dst: parts[1]}
		if len(parts) == 3 {
			m, err := parseMode(parts[2])
			if err != nil {
				return fmt.Errorf("--file %q: %w", f, err)
			}
			file.Mode = m
		}
		spec.Files = append(spec.Files, file)
	}
	for _, s := range symlinks {
		link, target, ok := strings.Cut(s, ":")
		if !ok || link == "" || target == "" {
			return fmt.Errorf("--symlink %q: want LINK:TARGET", s)
		}
		spec.Symlinks = append(spec.Symlinks, imagebuild.Symlink{Link: link, Target: target})
	}
	for _, d := range dirs {
		p, m, hasMode := strings.Cut(d, ":")
		dir := imagebuild.Dir{Path: p}
		if hasMode {
			mode, err := parseMode(m)
			if err != nil {
				return fmt.Errorf("--dir %q: %w", d, err)
			}
			dir.Mode = mode
		}
		spec.Dirs = append(spec.Dirs, dir)
	}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return fmt.Errorf("--label %q: want KEY=VALUE", l)
		}
		if spec.Labels == nil {
			spec.Labels = map[string]string{}
		}
		spec.Labels[k] = v
	}
	var err error
	if spec.Entrypoint, err = parseCommand(*entrypoint); err != nil {
		return fmt.Errorf("--entrypoint: %w", err)
	}
	if spec.Cmd, err = parseCommand(*cmd); err != nil {
		return fmt.Errorf("--cmd: %w", err)
	}

	if *push == "" && *ociArchive == "" && *dockerArchive == "" {
		return errors.New("nothing to do: give --push, --oci-archive and/or --docker-archive")
	}
	var nameOpts []name.Option
	if *insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	var pushRef name.Reference
	if *push != "" {
		if pushRef, err = name.ParseReference(*push, nameOpts...); err != nil {
			return fmt.Errorf("--push: %w", err)
		}
	}
	var archiveTag name.Tag
	if *ociArchive != "" || *dockerArchive != "" {
		r := *ref
		if r == "" {
			r = *push
		}
		if r == "" {
			return errors.New("archives need a name: give --name REF (or --push REF)")
		}
		if archiveTag, err = name.NewTag(r, nameOpts...); err != nil {
			return fmt.Errorf("--name: %w (a tag reference is needed)", err)
		}
	}

	img, err := imagebuild.Build(spec)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if *ociArchive != "" {
		if err := writeFile(*ociArchive, func(w io.Writer) error { return imagebuild.WriteOCIArchive(w, img, archiveTag) }); err != nil {
			return fmt.Errorf("--oci-archive: %w", err)
		}
		fmt.Fprintf(stderr, "wrote OCI archive %s (%s@%s)\n", *ociArchive, archiveTag.Name(), digest)
	}
	if *dockerArchive != "" {
		if err := imagebuild.WriteDockerArchive(*dockerArchive, img, archiveTag); err != nil {
			return fmt.Errorf("--docker-archive: %w", err)
		}
		fmt.Fprintf(stderr, "wrote docker archive %s (%s)\n", *dockerArchive, archiveTag.Name())
	}
	if pushRef != nil {
		auth := authn.Anonymous
		pw := *password
		if pw == "" {
			pw = os.Getenv("MKIMAGE_PASSWORD")
		}
		if *username != "" {
			auth = authn.FromConfig(authn.AuthConfig{Username: *username, Password: pw})
		}
		pctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		if err := pushImage(pctx, pushRef, img, auth); err != nil {
			return fmt.Errorf("push %s: %w", pushRef, err)
		}
		fmt.Fprintf(stderr, "pushed %s@%s\n", pushRef.Context().Name(), digest)
	}
	fmt.Fprintln(stdout, digest.String())
	return nil
}

func pushImage(ctx context.Context, ref name.Reference, img v1.Image, auth authn.Authenticator) error {
	return remote.Write(ref, img, remote.WithAuth(auth), remote.WithContext(ctx))
}

// parseCommand accepts a JSON array of strings or space-separated words.
func parseCommand(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if strings.HasPrefix(s, "[") {
		var out []string
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			return nil, fmt.Errorf("%q is not a JSON array of strings: %w", s, err)
		}
		return out, nil
	}
	return strings.Fields(s), nil
}

func parseMode(s string) (fs.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m == 0 || m > 0o7777 {
		return 0, fmt.Errorf("mode %q: want octal permission bits like 0755", s)
	}
	mode := fs.FileMode(m & 0o777)
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	return mode, nil
}

// writeFile writes through a temporary file renamed into place on success.
func writeFile(path string, write func(io.Writer) error) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
