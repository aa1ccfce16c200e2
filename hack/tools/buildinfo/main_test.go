package main

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

// fakeGit answers the git commands collect runs from a table.
func fakeGit(answers map[string]string) git {
	return func(args ...string) (string, error) {
		out, ok := answers[strings.Join(args, " ")]
		if !ok {
			return "", errors.New("unexpected git " + strings.Join(args, " "))
		}
		return out, nil
	}
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func cleanCheckout() map[string]string {
	return map[string]string{
		"rev-parse HEAD":           sha,
		"status --porcelain":       "",
		"log -1 --format=%cI HEAD": "2025-03-04T05:06:07+02:00",
		"describe --tags --always": "0123456",
	}
}

func TestCollectCleanCheckout(t *testing.T) {
	s, err := collect(fakeGit(cleanCheckout()), env(nil))
	require.NoError(t, err)
	assert.Equal(t, stamp{Version: "0123456", Commit: sha, TreeState: "clean", BuildDate: "2025-03-04T03:06:07Z"}, s)
}

func TestCollectDirtyCheckout(t *testing.T) {
	answers := cleanCheckout()
	answers["status --porcelain"] = " M pkg/process/version/version.go\n?? new.go"
	s, err := collect(fakeGit(answers), env(nil))
	require.NoError(t, err)
	assert.Equal(t, stamp{Version: "0123456-dirty", Commit: sha + "-dirty", TreeState: "dirty", BuildDate: "2025-03-04T03:06:07Z"}, s)
}

func TestCollectOverrides(t *testing.T) {
	s, err := collect(fakeGit(cleanCheckout()), env(map[string]string{"SOURCE_DATE_EPOCH": "1700000000", "KRUISE_VERSION": "v1.2.3"}))
	require.NoError(t, err)
	assert.Equal(t, stamp{Version: "v1.2.3", Commit: sha, TreeState: "clean", BuildDate: "2023-11-14T22:13:20Z"}, s)

	_, err = collect(fakeGit(cleanCheckout()), env(map[string]string{"SOURCE_DATE_EPOCH": "yesterday"}))
	assert.ErrorContains(t, err, `SOURCE_DATE_EPOCH="yesterday"`)
}

func TestCollectWithoutACheckout(t *testing.T) {
	_, err := collect(fakeGit(nil), env(nil))
	assert.ErrorContains(t, err, "rev-parse HEAD")
}

func TestCommitDate(t *testing.T) {
	for in, want := range map[string]string{
		"2025-03-04T05:06:07+02:00":   "2025-03-04T03:06:07Z",
		"2025-03-04T23:30:00-05:00\n": "2025-03-05T04:30:00Z",
		"2025-03-04T05:06:07Z":        "2025-03-04T05:06:07Z",
	} {
		got, err := commitDate(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := commitDate("Tue Mar 4 05:06:07 2025 +0200")
	assert.Error(t, err)
}

func TestLdflags(t *testing.T) {
	s := stamp{Version: "v1.2.3-dirty", Commit: sha + "-dirty", TreeState: "dirty", BuildDate: "2025-03-04T03:06:07Z"}
	got, err := s.ldflags()
	require.NoError(t, err)
	p := "-X github.com/nodekruise/kruise/pkg/process/version."
	assert.Equal(t, p+"gitVersion=v1.2.3-dirty "+p+"gitCommit="+sha+"-dirty "+p+"gitTreeState=dirty "+p+"buildDate=2025-03-04T03:06:07Z", got)

	for _, bad := range []string{"", "v1 2", `v"1`, "v'1"} {
		s.Version = bad
		_, err := s.ldflags()
		assert.Error(t, err, "version %q", bad)
	}
}

// The -X flags name variables of pkg/process/version; the linker ignores a name that does not exist, so a
// rename there would silently leave the binaries unstamped.
func TestLdflagsNameVariablesOfPkgVersion(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "..", "pkg", "process", "version", "version.go"), nil, 0)
	require.NoError(t, err)
	declared := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for _, name := range vs.Names {
				declared[name.Name] = true
			}
		}
		return true
	})
	flags, err := stamp{Version: "v", Commit: "c", TreeState: "t", BuildDate: "d"}.ldflags()
	require.NoError(t, err)
	for _, arg := range strings.Fields(flags) {
		if arg == "-X" {
			continue
		}
		name := strings.TrimPrefix(strings.SplitN(arg, "=", 2)[0], versionPkg+".")
		assert.True(t, declared[name], "pkg/process/version declares no variable %s", name)
	}
}

// Against a real repository: the date is the commit's, so describing one commit twice, at any
// time, gives the same stamp; a change to the tree marks it dirty.
func TestCollectRealCheckoutIsReproducible(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_NAME", "t")
	t.Setenv("GIT_AUTHOR_EMAIL", "t@example.invalid")
	t.Setenv("GIT_COMMITTER_NAME", "t")
	t.Setenv("GIT_COMMITTER_EMAIL", "t@example.invalid")
	t.Setenv("GIT_AUTHOR_DATE", "2024-02-03T04:05:06+01:00")
	t.Setenv("GIT_COMMITTER_DATE", "2024-02-03T04:05:06+01:00")
	run := gitIn(dir)
	_, err := run("init", "-q")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644))
	_, err = run("add", "a.txt")
	require.NoError(t, err)
	_, err = run("commit", "-q", "-m", "first")
	require.NoError(t, err)
	head, err := run("rev-parse", "HEAD")
	require.NoError(t, err)

	first, err := collect(run, env(nil))
	require.NoError(t, err)
	assert.Equal(t, stamp{Version: head[:7], Commit: head, TreeState: "clean", BuildDate: "2024-02-03T03:05:06Z"}, first)
	again, err := collect(run, env(nil))
	require.NoError(t, err)
	assert.Equal(t, first, again)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644))
	dirty, err := collect(run, env(nil))
	require.NoError(t, err)
	assert.Equal(t, stamp{Version: head[:7] + "-dirty", Commit: head + "-dirty", TreeState: "dirty", BuildDate: "2024-02-03T03:05:06Z"}, dirty)
}
