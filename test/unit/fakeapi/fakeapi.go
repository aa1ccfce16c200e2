// Package fakeapi is a small API server for the tests of kubectl-kruise's
// commands that run kubectl's own code (set, expose): it serves discovery
// for the built-in and kruise kinds, GET of the objects it holds, and
// PATCH and POST, which it records. Like the real API server, it refuses a
// strategic merge patch to a custom resource.
package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Server is the fake API server.
type Server struct {
	mu      sync.Mutex
	objects map[string][]byte
	log     []string
	URL     string
}

// Start serves objects (path → JSON) until the test ends.
func Start(t *testing.T, objects map[string]string) *Server {
	t.Helper()
	s := &Server{objects: map[string][]byte{}}
	for p, o := range objects {
		s.objects[p] = []byte(o)
	}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Flags are kubectl's flags pointing at the server, in namespace ns.
func (s *Server) Flags(t *testing.T, ns string) *genericclioptions.ConfigFlags {
	flags := genericclioptions.NewConfigFlags(false)
	server, cache := s.URL, t.TempDir()
	flags.APIServer, flags.Namespace, flags.CacheDir = &server, &ns, &cache
	empty := ""
	flags.KubeConfig = &empty
	return flags
}

// Log is the writes the server took: method, path, content type, body.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.log, "")
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := discovery[r.URL.Path]; ok && r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, d)
		return
	}
	body, _ := io.ReadAll(r.Body)
	switch r.Method {
	case http.MethodGet:
		obj, ok := s.objects[r.URL.Path]
		if !ok {
			status(w, http.StatusNotFound, "NotFound", r.URL.Path+" not found")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(obj)
	case http.MethodPatch:
		ct := r.Header.Get("Content-Type")
		s.log = append(s.log, fmt.Sprintf("PATCH %s %s\n%s\n", r.URL.Path, ct, body))
		obj, ok := s.objects[r.URL.Path]
		if !ok {
			status(w, http.StatusNotFound, "NotFound", r.URL.Path+" not found")
			return
		}
		if ct != "application/merge-patch+json" {
			status(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", "the body of the request was in an unknown format")
			return
		}
		patched, err := jsonpatch.MergePatch(obj, body)
		if err != nil {
			status(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		s.objects[r.URL.Path] = patched
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(patched)
	case http.MethodPost:
		s.log = append(s.log, fmt.Sprintf("POST %s\n%s\n", r.URL.Path, body))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	default:
		status(w, http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method)
	}
}

func status(w http.ResponseWriter, code int, reason, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "message": message, "code": code,
	})
}

func resources(gv string, list ...string) string {
	var rs []string
	for _, r := range list {
		name, kind, _ := strings.Cut(r, ":")
		kind, short, _ := strings.Cut(kind, ":")
		namespaced := kind != "SidecarSet"
		shorts := "[]"
		if short != "" {
			shorts = `["` + strings.ReplaceAll(short, ",", `","`) + `"]`
		}
		rs = append(rs, fmt.Sprintf(`{"name":%q,"singularName":%q,"namespaced":%t,"kind":%q,"shortNames":%s,"verbs":["get","list","patch","create","update"]}`,
			name, strings.ToLower(kind), namespaced, kind, shorts))
	}
	return fmt.Sprintf(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":%q,"resources":[%s]}`, gv, strings.Join(rs, ","))
}

var discovery = map[string]string{
	"/api":                          `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`,
	"/apis":                         `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},{"name":"apps.kruise.io","versions":[{"groupVersion":"apps.kruise.io/v1beta1","version":"v1beta1"},{"groupVersion":"apps.kruise.io/v1alpha1","version":"v1alpha1"}],"preferredVersion":{"groupVersion":"apps.kruise.io/v1beta1","version":"v1beta1"}}]}`,
	"/api/v1":                       resources("v1", "pods:Pod:po", "services:Service:svc"),
	"/apis/apps/v1":                 resources("apps/v1", "deployments:Deployment:deploy", "statefulsets:StatefulSet:sts", "daemonsets:DaemonSet:ds"),
	"/apis/apps.kruise.io/v1beta1":  resources("apps.kruise.io/v1beta1", "clonesets:CloneSet:clone", "statefulsets:StatefulSet:asts", "daemonsets:DaemonSet:ads", "sidecarsets:SidecarSet"),
	"/apis/apps.kruise.io/v1alpha1": resources("apps.kruise.io/v1alpha1", "clonesets:CloneSet:clone", "statefulsets:StatefulSet:asts", "daemonsets:DaemonSet:ads", "sidecarsets:SidecarSet"),
}
