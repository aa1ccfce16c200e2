package framework

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Files the local cluster's components append to (env overrides for other setups).
var (
	// CRIPullRecords is the recording CRI proxy's log of PullImage calls, one JSON line each.
	CRIPullRecords = envOr("KRUISE_E2E_PULL_RECORDS", "/var/tmp/kruise-local/criproxy/pulls.jsonl")
	// CredentialProviderCalls is the test credential provider plugin's log, "<time> <image>".
	CredentialProviderCalls = envOr("KRUISE_E2E_CREDPLUGIN_LOG", "/var/tmp/kruise-local/credential-provider/log/calls.log")
)

// PullRecord is one PullImage call the recording CRI proxy saw.
type PullRecord struct {
	Time               time.Time         `json:"time"`
	Image              string            `json:"image"`
	SandboxLabels      map[string]string `json:"sandboxLabels"`
	SandboxAnnotations map[string]string `json:"sandboxAnnotations"`
	HasSandboxConfig   bool              `json:"hasSandboxConfig"`
	HasAuth            bool              `json:"hasAuth"`
	Error              string            `json:"error"`
	Code               string            `json:"code"`
	ImageRef           string            `json:"imageRef"`
}

func (r PullRecord) String() string {
	return fmt.Sprintf("{%s %s code=%s hasAuth=%t labels=%v annotations=%v error=%q}", r.Time.Format(time.RFC3339Nano),
		r.Image, r.Code, r.HasAuth, r.SandboxLabels, r.SandboxAnnotations, r.Error)
}

// PullRecordsFor returns the proxy's records of PullImage calls for image that arrived at or after
// since (the proxy writes a record when the call returns).
func PullRecordsFor(t testing.TB, image string, since time.Time) []PullRecord {
	t.Helper()
	file, err := os.Open(CRIPullRecords)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading the CRI proxy's records: %v", err)
	}
	defer file.Close()
	var out []PullRecord
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var r PullRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // a line being written
		}
		if r.Image == image && !r.Time.Before(since) {
			out = append(out, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", CRIPullRecords, err)
	}
	return out
}

// WaitPullRecord waits for a record of a PullImage call for image (arrived since) that cond
// accepts, and returns it.
func WaitPullRecord(ctx context.Context, t testing.TB, image string, since time.Time, timeout time.Duration, desc string,
	cond func(PullRecord) bool) PullRecord {
	t.Helper()
	var got PullRecord
	WaitFor(ctx, t, timeout, "CRI PullImage record for "+image+": "+desc, func(context.Context) (bool, string, error) {
		recs := PullRecordsFor(t, image, since)
		for _, r := range recs {
			if cond(r) {
				got = r
				return true, "found", nil
			}
		}
		return false, fmt.Sprintf("records %v (in %s)", recs, CRIPullRecords), nil
	})
	return got
}

// CredentialProviderCallsFor returns the lines of the credential provider plugin's log for repo.
// Like the kubelet, kruise-daemon asks the plugin about the repository to pull, without the tag.
func CredentialProviderCallsFor(t testing.TB, repo string) []string {
	t.Helper()
	raw, err := os.ReadFile(CredentialProviderCalls)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading the credential provider's log: %v", err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == repo {
			out = append(out, line)
		}
	}
	return out
}
