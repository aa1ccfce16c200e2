//go:build bench

package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// auditLog is the local cluster's API server audit log (hack/cluster.sh): Metadata level for the
// requests of kruise-system's service accounts, nothing else. It rotates at 100 MB into
// audit-<timestamp>.log, one backup kept.
var auditLog = envStr("BENCH_AUDIT_LOG", "/var/tmp/kruise-local/logs/audit.log")

// auditEvent is the part of an audit.k8s.io/v1 Event the benchmarks read.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string              `json:"username"`
		Extra    map[string][]string `json:"extra"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// Resource is "group/resource[/subresource]" ("" group for core), or the URI when there is no
// object reference.
func (e *auditEvent) Resource() string {
	if e.ObjectRef == nil {
		return e.RequestURI
	}
	r := e.ObjectRef.APIGroup + "/" + e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	return r
}

// NodeName is the node the request's service-account token is bound to, if any.
func (e *auditEvent) NodeName() string {
	if v := e.User.Extra["authentication.kubernetes.io/node-name"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// auditRequests returns one event per request (its last stage seen) received in [from, to) and
// accepted by keep, in the order they were received, from the local cluster's audit log.
func auditRequests(from, to time.Time, keep func(*auditEvent) bool) ([]auditEvent, error) {
	return auditRequestsIn(auditLog, from, to, keep)
}

// auditRequestsIn is auditRequests of the audit log at path. It reads the rotated backups
// (audit-*.log beside it) too, so a window that spans a rotation is complete.
func auditRequestsIn(path string, from, to time.Time, keep func(*auditEvent) bool) ([]auditEvent, error) {
	files, err := filepath.Glob(filepath.Join(filepath.Dir(path), "audit-*.log"))
	if err != nil {
		return nil, err
	}
	files = append(files, path)
	byID := map[string]auditEvent{}
	for _, f := range files {
		if err := readAuditFile(f, func(e *auditEvent) {
			if e.RequestReceived.Before(from) || !e.RequestReceived.Before(to) || !keep(e) {
				return
			}
			byID[e.AuditID] = *e
		}); err != nil {
			return nil, err
		}
	}
	out := make([]auditEvent, 0, len(byID))
	for _, e := range byID {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RequestReceived.Before(out[j].RequestReceived) })
	return out, nil
}

func readAuditFile(path string, each func(*auditEvent)) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening audit log: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		var e auditEvent
		// The API server may be mid-write of the last line: skip what does not parse.
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.AuditID == "" {
			continue
		}
		each(&e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading audit log %s: %w", path, err)
	}
	return nil
}

// byUser keeps the requests of one user (e.g. "system:serviceaccount:kruise-system:kruise-daemon").
func byUser(user string) func(*auditEvent) bool {
	return func(e *auditEvent) bool { return e.User.Username == user }
}

// countBy counts events by key(e).
func countBy(events []auditEvent, key func(*auditEvent) string) map[string]int {
	out := map[string]int{}
	for i := range events {
		out[key(&events[i])]++
	}
	return out
}
