package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nodekruise/kruise/test/registry"
)

func startRegistry(t *testing.T) string {
	t.Helper()
	h, err := registry.New(registry.Options{
		BasicUser: "u", BasicPassword: "basic-pw",
		TokenUser: "u", TokenPassword: "token-pw",
		BlobDir: t.TempDir(),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("mkimage %q: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

type entry struct {
	typ      byte
	mode     int64
	linkname string
	data     string
}

// readTar lists a tar stream by name.
func readTar(t *testing.T, r io.Reader) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.ModTime.Unix() != 0 || hdr.Uid != 0 || hdr.Gid != 0 {
			t.Errorf("%s: mtime %v uid %d gid %d, want Epoch and root", hdr.Name, hdr.ModTime, hdr.Uid, hdr.Gid)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = entry{typ: hdr.Typeflag, mode: hdr.Mode, linkname: hdr.Linkname, data: string(b)}
	}
}

func TestBuildPushAndReadBack(t *testing.T) {
	host := startRegistry(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "hello.sh")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "app.conf")
	if err := os.WriteFile(conf, []byte("key=value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := host + "/basic/app:v1"
	args := []string{
		"--file", src + ":/usr/local/bin/hello",
		"--file", conf + ":/etc/app/app.conf:0640",
		"--symlink", "/hello:/usr/local/bin/hello",
		"--dir", "/data:0700",
		"--entrypoint", `["/hello", "--flag"]`,
		"--cmd", "a b",
		"--env", "FOO=bar",
		"--workdir", "/data",
		"--user", "65534",
		"--label", "purpose=test",
		"--push", ref, "--username", "u", "--password", "basic-pw",
	}
	digest := runOK(t, args...)
	if !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("printed %q, want a digest", digest)
	}
	// Same inputs, same digest (pushed again under another tag).
	if again := runOK(t, append(slices.Clone(args[:len(args)-6]), "--push", host+"/public/app:v2")...); again != digest {
		t.Fatalf("rebuild gave %s, first build %s", again, digest)
	}
	// Another mode, another digest: the comparison above can fail.
	if other := runOK(t, "--file", src+":/usr/local/bin/hello:0700", "--push", host+"/public/app:v3"); other == digest {
		t.Fatal("different inputs gave the same digest")
	}

	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r, remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: "u", Password: "basic-pw"})))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := img.Digest(); d.String() != digest {
		t.Fatalf("registry has %s, mkimage printed %s", d, digest)
	}
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || cf.Created.Unix() != 0 {
		t.Errorf("platform %s/%s created %v", cf.OS, cf.Architecture, cf.Created)
	}
	wantCfg := v1.Config{
		Entrypoint: []string{"/hello", "--flag"},
		Cmd:        []string{"a", "b"},
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "FOO=bar"},
		WorkingDir: "/data",
		User:       "65534",
		Labels:     map[string]string{"purpose": "test"},
	}
	if !reflect.DeepEqual(cf.Config, wantCfg) {
		t.Errorf("config\n got %+v\nwant %+v", cf.Config, wantCfg)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s", mt)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := readTar(t, rc)
	want := map[string]entry{
		"data/":               {typ: tar.TypeDir, mode: 0o700},
		"etc/":                {typ: tar.TypeDir, mode: 0o755},
		"etc/app/":            {typ: tar.TypeDir, mode: 0o755},
		"etc/app/app.conf":    {typ: tar.TypeReg, mode: 0o640, data: "key=value\n"},
		"hello":               {typ: tar.TypeSymlink, mode: 0o777, linkname: "/usr/local/bin/hello"},
		"usr/":                {typ: tar.TypeDir, mode: 0o755},
		"usr/local/":          {typ: tar.TypeDir, mode: 0o755},
		"usr/local/bin/":      {typ: tar.TypeDir, mode: 0o755},
		"usr/local/bin/hello": {typ: tar.TypeReg, mode: 0o755, data: "#!/bin/sh\necho hello\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layer\n got %+v\nwant %+v", got, want)
	}
}

// fakeBusybox writes a script that answers --list-full like busybox does.
func fakeBusybox(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "busybox")
	script := "#!/bin/sh\nif [ \"$1\" = --list-full ]; then printf 'bin/sh\\nbin/sleep\\nusr/bin/wget\\nbin/busybox\\n'; exit 0; fi\nexit 1\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBusyboxOCIArchive(t *testing.T) {
	bb := fakeBusybox(t)
	out := filepath.Join(t.TempDir(), "bb.tar")
	docker := filepath.Join(t.TempDir(), "bb-docker.tar")
	digest := runOK(t, "--busybox", bb, "--cmd", "sh", "--name", "127.0.0.1:5000/public/busybox:test",
		"--oci-archive", out, "--docker-archive", docker)

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := readTar(t, f)
	var index v1.IndexManifest
	if err := json.Unmarshal([]byte(files["index.json"].data), &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index has %d manifests", len(index.Manifests))
	}
	m := index.Manifests[0]
	if m.Digest.String() != digest || m.Annotations["io.containerd.image.name"] != "127.0.0.1:5000/public/busybox:test" ||
		m.Annotations["org.opencontainers.image.ref.name"] != "test" {
		t.Fatalf("index entry %+v, digest printed %s", m, digest)
	}
	if files["oci-layout"].data != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", files["oci-layout"].data)
	}
	var manifest v1.Manifest
	if err := json.Unmarshal([]byte(files["blobs/sha256/"+m.Digest.Hex].data), &manifest); err != nil {
		t.Fatal(err)
	}
	if len(manifest.Layers) != 1 {
		t.Fatalf("manifest has %d layers", len(manifest.Layers))
	}
	for _, d := range []v1.Descriptor{manifest.Config, manifest.Layers[0]} {
		if e, ok := files["blobs/sha256/"+d.Digest.Hex]; !ok || int64(len(e.data)) != d.Size {
			t.Errorf("blob %s missing or wrong size", d.Digest)
		}
	}
	// The layer holds busybox, its applets and the base files.
	layer, err := decompress(files["blobs/sha256/"+manifest.Layers[0].Digest.Hex].data)
	if err != nil {
		t.Fatal(err)
	}
	entries := readTar(t, layer)
	for p, want := range map[string]entry{
		"bin/sh":       {typ: tar.TypeSymlink, mode: 0o777, linkname: "/bin/busybox"},
		"bin/sleep":    {typ: tar.TypeSymlink, mode: 0o777, linkname: "/bin/busybox"},
		"usr/bin/wget": {typ: tar.TypeSymlink, mode: 0o777, linkname: "/bin/busybox"},
		"tmp/":         {typ: tar.TypeDir, mode: 0o1777},
		"root/":        {typ: tar.TypeDir, mode: 0o700},
	} {
		if got := entries[p]; got != want {
			t.Errorf("%s: got %+v want %+v", p, got, want)
		}
	}
	if e := entries["bin/busybox"]; e.typ != tar.TypeReg || e.mode != 0o755 || !strings.Contains(e.data, "--list-full") {
		t.Errorf("bin/busybox: %+v", e)
	}
	if !strings.HasPrefix(entries["etc/passwd"].data, "root:x:0:0:") || !strings.HasPrefix(entries["etc/group"].data, "root:x:0:") {
		t.Errorf("passwd %q group %q", entries["etc/passwd"].data, entries["etc/group"].data)
	}

	// The docker archive names the image in RepoTags.
	df, err := os.Open(docker)
	if err != nil {
		t.Fatal(err)
	}
	defer df.Close()
	var dm []struct{ RepoTags []string }
	if err := json.Unmarshal([]byte(readTar(t, df)["manifest.json"].data), &dm); err != nil {
		t.Fatal(err)
	}
	if len(dm) != 1 || !reflect.DeepEqual(dm[0].RepoTags, []string{"127.0.0.1:5000/public/busybox:test"}) {
		t.Errorf("docker manifest.json %+v", dm)
	}
}

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{},                                 // nothing to do
		{"--file", "x", "--push", "r/a:b"}, // no DST
		{"--oci-archive", "/tmp/x.tar"},    // no name
		{"--entrypoint", "[bad", "--push", "127.0.0.1:1/public/a:b"},
		{"--file", "/nonexistent:/x", "--push", "127.0.0.1:1/public/a:b"},
		{"--file", "/etc/hostname:relative", "--push", "127.0.0.1:1/public/a:b"},
		{"--symlink", "/a:/b", "--symlink", "/a:/c", "--push", "127.0.0.1:1/public/a:b"},
	} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("mkimage %q succeeded", args)
		}
	}
	if err := run(context.Background(), []string{"--help"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
}

func decompress(s string) (io.Reader, error) {
	return gzip.NewReader(strings.NewReader(s))
}
