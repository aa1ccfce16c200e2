// Command buildinfo prints the -ldflags -X arguments that stamp the kruise binaries with the
// version, commit, tree state and build date of the git checkout it runs in (package
// pkg/process/version holds the variables):
//
//	go build -trimpath -ldflags "-s -w $(go run ./hack/tools/buildinfo)" ./cmd/...
//
// The build date is the date of the commit, not the time of the build, so that building one
// commit twice gives the same binary (and the same image digest, so no needless rollout).
// SOURCE_DATE_EPOCH (https://reproducible-builds.org/specs/source-date-epoch/) overrides it.
// A tree with changes, untracked files included, is "dirty": the commit and the version then end
// in "-dirty". KRUISE_VERSION overrides the version (default: git describe --tags --always).
//
// Outside a git checkout (or without git) it prints a warning on stderr and nothing on stdout:
// the binaries then keep pkg/process/version's defaults, which say that nothing was stamped.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// versionPkg is the package whose variables the -X flags set.
const versionPkg = "github.com/nodekruise/kruise/pkg/process/version"

// dateLayout is how pkg/process/version's buildDate is written: RFC 3339 in UTC, whole seconds.
const dateLayout = "2006-01-02T15:04:05Z"

func main() {
	dir := flag.String("C", ".", "the git checkout to describe")
	flag.Parse()
	s, err := collect(gitIn(*dir), os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "buildinfo: %v; the binaries will not say which commit they were built from\n", err)
		return
	}
	flags, err := s.ldflags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildinfo:", err)
		os.Exit(1)
	}
	fmt.Println(flags)
}

// git runs git with args and returns its standard output without the trailing newline.
type git func(args ...string) (string, error)

// gitIn runs the git binary in dir.
func gitIn(dir string) git {
	return func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimRight(string(out), "\n"), nil
	}
}

// stamp is what the binaries are stamped with.
type stamp struct {
	Version, Commit, TreeState, BuildDate string
}

// collect asks git about the checkout; getenv reads the overrides.
func collect(run git, getenv func(string) string) (stamp, error) {
	commit, err := run("rev-parse", "HEAD")
	if err != nil {
		return stamp{}, err
	}
	status, err := run("status", "--porcelain")
	if err != nil {
		return stamp{}, err
	}
	s := stamp{Commit: commit, TreeState: "clean"}
	if status != "" {
		s.TreeState = "dirty"
		s.Commit += "-dirty"
	}

	if epoch := getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		if s.BuildDate, err = epochDate(epoch); err != nil {
			return stamp{}, err
		}
	} else {
		iso, err := run("log", "-1", "--format=%cI", "HEAD")
		if err != nil {
			return stamp{}, err
		}
		if s.BuildDate, err = commitDate(iso); err != nil {
			return stamp{}, err
		}
	}

	if s.Version = getenv("KRUISE_VERSION"); s.Version == "" {
		if s.Version, err = run("describe", "--tags", "--always"); err != nil {
			return stamp{}, err
		}
		if s.TreeState == "dirty" {
			s.Version += "-dirty"
		}
	}
	return s, nil
}

// commitDate turns git's strict ISO 8601 committer date (%cI, with the committer's offset) into
// buildDate's form, in UTC.
func commitDate(iso string) (string, error) {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(iso))
	if err != nil {
		return "", fmt.Errorf("reading the commit date %q: %w", iso, err)
	}
	return t.UTC().Format(dateLayout), nil
}

// epochDate turns SOURCE_DATE_EPOCH (seconds since 1970, UTC) into buildDate's form.
func epochDate(epoch string) (string, error) {
	sec, err := strconv.ParseInt(strings.TrimSpace(epoch), 10, 64)
	if err != nil || sec < 0 {
		return "", fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds since 1970", epoch)
	}
	return time.Unix(sec, 0).UTC().Format(dateLayout), nil
}

// ldflags renders the -X arguments. A value with white space or a quote would be split or
// mangled by go build's -ldflags parsing, so it is refused.
func (s stamp) ldflags() (string, error) {
	vars := []struct{ name, value string }{
		{"gitVersion", s.Version},
		{"gitCommit", s.Commit},
		{"gitTreeState", s.TreeState},
		{"buildDate", s.BuildDate},
	}
	parts := make([]string, 0, len(vars))
	for _, v := range vars {
		if v.value == "" || strings.ContainsAny(v.value, " \t\n\r'\"\\") {
			return "", errors.New("cannot stamp " + v.name + "=" + strconv.Quote(v.value) + ": empty, or white space or quotes in it")
		}
		parts = append(parts, "-X "+versionPkg+"."+v.name+"="+v.value)
	}
	return strings.Join(parts, " "), nil
}
