// Package imagebuild builds small single-layer linux/amd64 OCI images from
// local files, without a container runtime. Output is deterministic: every
// timestamp is Epoch, owners are root and entries are sorted, so the same
// inputs always give the same image digest.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Epoch is the timestamp of every file and of the image itself.
var Epoch = time.Unix(0, 0).UTC()

// DefaultPath is the PATH put in the image environment unless Spec.Env sets one.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// File copies a local file into the image.
type File struct {
	Src string
	Dst string // absolute path in the image
	// Mode is the permission bits; 0 means 0755 if Src is executable by its
	// owner, else 0644.
	Mode fs.FileMode
}

// Dir creates a directory in the image.
type Dir struct {
	Path string
	Mode fs.FileMode // 0 means 0755
}

// Symlink creates a symbolic link Link -> Target in the image.
type Symlink struct {
	Link   string
	Target string
}

// Spec describes an image.
type Spec struct {
	Files    []File
	Dirs     []Dir
	Symlinks []Symlink
	// Busybox, if set, is a static busybox binary installed at /bin/busybox
	// with a symbolic link for each applet it lists (`--list-full`, or
	// `--list` into /bin for builds without it). It implies BaseFiles.
	Busybox string
	// BaseFiles adds a minimal /etc/passwd and /etc/group (root and nobody),
	// /tmp (mode 1777) and /root.
	BaseFiles bool

	Entrypoint []string
	Cmd        []string
	Env        []string // KEY=VALUE; DefaultPath is added unless PATH is set
	WorkingDir string
	User       string
	Labels     map[string]string
}

type kind int

const (
	kindDir kind = iota
	kindFile
	kindSymlink
)

type node struct {
	kind   kind
	mode   fs.FileMode
	data   []byte
	target string
	user   bool // added by an explicit File, Dir or Symlink
	origin string
}

type tree map[string]*node

// add puts n at p. An entry given explicitly replaces one from Busybox or
// BaseFiles; two explicit entries for one path are an error, unless both are
// the same directory.
func (t tree) add(p string, n *node) error {
	p, err := clean(p)
	if err != nil {
		return err
	}
	if p == "" {
		if n.kind != kindDir {
			return fmt.Errorf("%s: cannot replace /", n.origin)
		}
		return nil
	}
	if old, ok := t[p]; ok && old.user && n.user && !(old.kind == kindDir && n.kind == kindDir) {
		return fmt.Errorf("/%s given twice (%s, %s)", p, old.origin, n.origin)
	} else if ok && old.user && !n.user {
		return nil
	}
	t[p] = n
	return nil
}

func clean(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q in the image must be absolute", p)
	}
	c := strings.TrimPrefix(path.Clean(p), "/")
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q escapes the root", p)
	}
	return c, nil
}

// Build creates the image described by spec.
func Build(spec Spec) (v1.Image, error) {
	layer, err := Layer(spec)
	if err != nil {
		return nil, err
	}
	env := append([]string(nil), spec.Env...)
	hasPath := false
	for _, e := range env {
		if !strings.Contains(e, "=") {
			return nil, fmt.Errorf("environment entry %q is not KEY=VALUE", e)
		}
		if strings.HasPrefix(e, "PATH=") {
			hasPath = true
		}
	}
	if !hasPath {
		env = append([]string{DefaultPath}, env...)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Created:      v1.Time{Time: Epoch},
		Config: v1.Config{
			Entrypoint: spec.Entrypoint,
			Cmd:        spec.Cmd,
			Env:        env,
			WorkingDir: spec.WorkingDir,
			User:       spec.User,
			Labels:     spec.Labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: Epoch},
			CreatedBy: "mkimage",
			Comment:   "single layer built from local files",
		},
		MediaType: types.OCILayer,
	})
}

// Layer builds the single gzip-compressed layer of spec.
func Layer(spec Spec) (v1.Layer, error) {
	data, err := LayerTar(spec)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// LayerTar returns the uncompressed tar of the image's file system.
func LayerTar(spec Spec) ([]byte, error) {
	t := tree{}
	if spec.BaseFiles || spec.Busybox != "" {
		base := []struct {
			p string
			n *node
		}{
			{"/etc", &node{kind: kindDir, mode: 0o755}},
			{"/etc/passwd", &node{kind: kindFile, mode: 0o644, data: []byte(
				"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")}},
			{"/etc/group", &node{kind: kindFile, mode: 0o644, data: []byte("root:x:0:\nnobody:x:65534:\n")}},
			{"/tmp", &node{kind: kindDir, mode: 0o777 | fs.ModeSticky}},
			{"/root", &node{kind: kindDir, mode: 0o700}},
		}
		for _, b := range base {
			b.n.origin = "base files"
			if err := t.add(b.p, b.n); err != nil {
				return nil, err
			}
		}
	}
	if spec.Busybox != "" {
		data, err := os.ReadFile(spec.Busybox)
		if err != nil {
			return nil, err
		}
		if err := t.add("/bin/busybox", &node{kind: kindFile, mode: 0o755, data: data, origin: "busybox"}); err != nil {
			return nil, err
		}
		applets, err := BusyboxApplets(spec.Busybox)
		if err != nil {
			return nil, err
		}
		for _, a := range applets {
			if a == "/bin/busybox" {
				continue
			}
			if err := t.add(a, &node{kind: kindSymlink, target: "/bin/busybox", origin: "busybox"}); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range spec.Dirs {
		mode := d.Mode
		if mode == 0 {
			mode = 0o755
		}
		if err := t.add(d.Path, &node{kind: kindDir, mode: mode, user: true, origin: "dir " + d.Path}); err != nil {
			return nil, err
		}
	}
	for _, s := range spec.Symlinks {
		if s.Target == "" {
			return nil, fmt.Errorf("symlink %s: empty target", s.Link)
		}
		if err := t.add(s.Link, &node{kind: kindSymlink, target: s.Target, user: true, origin: "symlink " + s.Link}); err != nil {
			return nil, err
		}
	}
	for _, f := range spec.Files {
		st, err := os.Stat(f.Src)
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", f.Src)
		}
		data, err := os.ReadFile(f.Src)
		if err != nil {
			return nil, err
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
			if st.Mode().Perm()&0o100 != 0 {
				mode = 0o755
			}
		}
		if err := t.add(f.Dst, &node{kind: kindFile, mode: mode, data: data, user: true, origin: "file " + f.Src}); err != nil {
			return nil, err
		}
	}
	// Parent directories, and no file or link as a parent.
	for p := range t {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if n, ok := t[dir]; !ok {
				t[dir] = &node{kind: kindDir, mode: 0o755}
			} else if n.kind != kindDir {
				return nil, fmt.Errorf("/%s is a parent of /%s but not a directory (%s)", dir, p, n.origin)
			}
		}
	}
	paths := make([]string, 0, len(t))
	for p := range t {
		paths = append(paths, p)
	}
	sort.Strings(paths) // a parent sorts before its children

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		n := t[p]
		hdr := &tar.Header{
			Name:    p,
			Mode:    int64(n.mode.Perm()),
			ModTime: Epoch,
			Uname:   "root",
			Gname:   "root",
		}
		if n.mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		if n.mode&fs.ModeSetgid != 0 {
			hdr.Mode |= 0o2000
		}
		if n.mode&fs.ModeSetuid != 0 {
			hdr.Mode |= 0o4000
		}
		switch n.kind {
		case kindDir:
			hdr.Typeflag = tar.TypeDir
			hdr.Name += "/"
		case kindSymlink:
			hdr.Typeflag = tar.TypeSymlink
			hdr.Linkname = n.target
			hdr.Mode = 0o777
		case kindFile:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(n.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if n.kind == kindFile {
			if _, err := tw.Write(n.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// BusyboxApplets returns the absolute paths of the applets of a busybox
// binary, from `busybox --list-full`, or from `busybox --list` placed in /bin.
func BusyboxApplets(busybox string) ([]string, error) {
	var out []string
	if b, err := exec.Command(busybox, "--list-full").Output(); err == nil && len(bytes.TrimSpace(b)) > 0 {
		for _, l := range strings.Fields(string(b)) {
			out = append(out, "/"+strings.TrimPrefix(l, "/"))
		}
		return out, nil
	}
	b, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	for _, l := range strings.Fields(string(b)) {
		out = append(out, "/bin/"+l)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s --list printed no applets", busybox)
	}
	return out, nil
}

// Annotations put in the OCI archive index so that `ctr images import` names
// the image.
const (
	AnnotationContainerdImageName = "io.containerd.image.name"
	AnnotationRefName             = "org.opencontainers.image.ref.name"
)

// WriteOCIArchive writes img as a tar of an OCI image layout, with ref as its
// name, in the form `ctr -n k8s.io images import` accepts; the image keeps the
// digest it has in a registry.
func WriteOCIArchive(w io.Writer, img v1.Image, ref name.Tag) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	desc, err := partialDescriptor(img, manifest)
	if err != nil {
		return err
	}
	desc.Annotations = map[string]string{
		AnnotationContainerdImageName: ref.Name(),
		AnnotationRefName:             ref.TagStr(),
	}
	desc.Platform = &v1.Platform{Architecture: "amd64", OS: "linux"}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests:     []v1.Descriptor{*desc},
	})
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	writeFile := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: Epoch}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	writeBlob := func(h v1.Hash, size int64, rc io.ReadCloser) error {
		defer rc.Close()
		if err := tw.WriteHeader(&tar.Header{Name: "blobs/" + h.Algorithm + "/" + h.Hex, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: Epoch}); err != nil {
			return err
		}
		n, err := io.Copy(tw, rc)
		if err == nil && n != size {
			err = fmt.Errorf("blob %s: wrote %d bytes, want %d", h, n, size)
		}
		return err
	}
	if err := writeFile("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := writeFile("index.json", index); err != nil {
		return err
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: Epoch}); err != nil {
			return err
		}
	}
	if err := writeBlob(desc.Digest, desc.Size, io.NopCloser(bytes.NewReader(manifest))); err != nil {
		return err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	if err := writeBlob(cfgName, int64(len(cfg)), io.NopCloser(bytes.NewReader(cfg))); err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		size, err := l.Size()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		if err := writeBlob(d, size, rc); err != nil {
			return err
		}
	}
	return tw.Close()
}

func partialDescriptor(img v1.Image, manifest []byte) (*v1.Descriptor, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	if mt == "" {
		return nil, errors.New("image has no media type")
	}
	return &v1.Descriptor{MediaType: mt, Size: int64(len(manifest)), Digest: d}, nil
}

// WriteDockerArchive writes img in the `docker save` format with ref in its
// RepoTags. `ctr images import` accepts it too, but recomputes the manifest,
// so the imported digest differs from the registry's.
func WriteDockerArchive(file string, img v1.Image, ref name.Tag) error {
	return tarball.WriteToFile(file, ref, img)
}
