// Package version reports the build identity of the kruise binaries.
//
// The variables are set at link time by hack/tools/buildinfo (make build, hack/images.sh), from
// the git checkout: the commit, "-dirty" when the tree has changes, and the commit's date as the
// build date, so that one commit always gives the same binary:
//
//	go build -trimpath -ldflags "$(go run ./hack/tools/buildinfo)" ./cmd/...
package version

import (
	"fmt"
	"runtime"
)

// Set through -ldflags -X; the defaults mark a build that did not set them.
var (
	gitVersion   = "v0.0.0-dev"
	gitCommit    = "unknown"
	gitTreeState = "unknown"
	buildDate    = "1970-01-01T00:00:00Z"
)

// Info is the build identity of a binary.
type Info struct {
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Platform     string `json:"platform"`
}

// Get returns the build identity of the running binary.
func Get() Info {
	return Info{
		GitVersion:   gitVersion,
		GitCommit:    gitCommit,
		GitTreeState: gitTreeState,
		BuildDate:    buildDate,
		GoVersion:    runtime.Version(),
		Platform:     runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// String renders the identity on one line, for --version and the start-up log.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, tree %s, built %s, %s %s)",
		i.GitVersion, i.GitCommit, i.GitTreeState, i.BuildDate, i.GoVersion, i.Platform)
}
