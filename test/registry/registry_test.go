package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

const (
	basicUser = "alice"
	basicPW   = "basic-secret"
	tokenUser = "bob"
	tokenPW   = "token-secret"
)

var (
	basicAuth = authn.FromConfig(authn.AuthConfig{Username: basicUser, Password: basicPW})
	tokenAuth = authn.FromConfig(authn.AuthConfig{Username: tokenUser, Password: tokenPW})
	wrongAuth = authn.FromConfig(authn.AuthConfig{Username: basicUser, Password: "wrong"})
)

// logBuffer collects log records so tests can assert on them.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type testRegistry struct {
	h       *Handler
	srv     *httptest.Server
	host    string // 127.0.0.1:port
	blobDir string
	logs    *logBuffer
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	logs := &logBuffer{}
	blobDir := filepath.Join(t.TempDir(), "blobs")
	h, err := New(Options{
		Name:          "test-registry",
		BasicUser:     basicUser,
		BasicPassword: basicPW,
		TokenUser:     tokenUser,
		TokenPassword: tokenPW,
		BlobDir:       blobDir,
		Logger:        slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &testRegistry{h: h, srv: srv, host: u.Host, blobDir: blobDir, logs: logs}
}

func (tr *testRegistry) ref(t *testing.T, repoTag string) name.Reference {
	t.Helper()
	ref, err := name.ParseReference(tr.host+"/"+repoTag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func statusOf(err error) int {
	var terr *transport.Error
	if errors.As(err, &terr) {
		return terr.StatusCode
	}
	return 0
}

func randomImage(t *testing.T) v1.Image {
	t.Helper()
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func mustDigest(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkRoundTrip pulls ref and compares it with img, reading every layer.
func checkRoundTrip(t *testing.T, ref name.Reference, auth authn.Authenticator, img v1.Image) {
	t.Helper()
	got, err := remote.Image(ref, remote.WithAuth(auth))
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	if g, w := mustDigest(t, got), mustDigest(t, img); g != w {
		t.Fatalf("pulled digest %s, pushed %s", g, w)
	}
	layers, err := got.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 {
		t.Fatalf("got %d layers, want 2", len(layers))
	}
	for _, l := range layers {
		rc, err := l.Compressed() // verifies the digest while reading
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatalf("read layer: %v", err)
		}
		rc.Close()
	}
}

func TestPushPullPerPrefix(t *testing.T) {
	tr := newTestRegistry(t)
	cases := []struct {
		prefix string
		good   authn.Authenticator
		// wrong lists authenticators that must be refused with 401.
		wrong map[string]authn.Authenticator
	}{
		{
			prefix: "public/",
			good:   authn.Anonymous,
			wrong:  map[string]authn.Authenticator{"wrong password": wrongAuth},
		},
		{
			prefix: "basic/",
			good:   basicAuth,
			wrong: map[string]authn.Authenticator{
				"anonymous":      authn.Anonymous,
				"wrong password": wrongAuth,
				"token user":     tokenAuth,
			},
		},
		{
			prefix: "token/",
			good:   tokenAuth,
			wrong: map[string]authn.Authenticator{
				"anonymous":      authn.Anonymous,
				"wrong password": authn.FromConfig(authn.AuthConfig{Username: tokenUser, Password: "nope"}),
				"basic user":     basicAuth,
			},
		},
	}
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.prefix, "/"), func(t *testing.T) {
			img := randomImage(t)
			ref := tr.ref(t, tc.prefix+"img:v1")

			for what, auth := range tc.wrong {
				err := remote.Write(ref, img, remote.WithAuth(auth))
				if statusOf(err) != http.StatusUnauthorized {
					t.Errorf("push with %s: want 401, got %v", what, err)
				}
			}
			if err := remote.Write(ref, img, remote.WithAuth(tc.good)); err != nil {
				t.Fatalf("push: %v", err)
			}
			checkRoundTrip(t, ref, tc.good, img)
			for what, auth := range tc.wrong {
				_, err := remote.Image(ref, remote.WithAuth(auth))
				if statusOf(err) != http.StatusUnauthorized {
					t.Errorf("pull with %s: want 401, got %v", what, err)
				}
			}
			// Missing tag: 404 for an authorized client.
			_, err := remote.Image(tr.ref(t, tc.prefix+"img:missing"), remote.WithAuth(tc.good))
			if statusOf(err) != http.StatusNotFound {
				t.Errorf("missing tag: want 404, got %v", err)
			}
			// Blobs are on disk.
			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range layers {
				d, err := l.Digest()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(tr.blobDir, d.Algorithm, d.Hex)); err != nil {
					t.Errorf("layer %s not on disk: %v", d, err)
				}
			}
		})
	}
	// Anonymous pull works for public/ only.
	if _, err := remote.Image(tr.ref(t, "public/img:v1")); err != nil {
		t.Errorf("anonymous public pull: %v", err)
	}
	if !strings.Contains(tr.logs.String(), "status=401") || !strings.Contains(tr.logs.String(), "status=201") {
		t.Errorf("requests not logged with their status:\n%s", tr.logs.String())
	}
}

func TestUnknownPrefix(t *testing.T) {
	tr := newTestRegistry(t)
	err := remote.Write(tr.ref(t, "other/img:v1"), randomImage(t))
	if statusOf(err) != http.StatusNotFound {
		t.Fatalf("push outside the prefixes: want 404, got %v", err)
	}
}

// do sends a raw request, as containerd would, and returns the response with its body read.
func do(t *testing.T, method, u string, hdr map[string]string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func basicHeader(user, pw string) map[string]string {
	r, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	r.SetBasicAuth(user, pw)
	return map[string]string{"Authorization": r.Header.Get("Authorization")}
}

func bearerHeader(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok}
}

func getToken(t *testing.T, tr *testRegistry, hdr map[string]string, scopes ...string) (int, tokenResponse) {
	t.Helper()
	q := url.Values{"service": {"test-registry"}, "scope": scopes}
	resp, body := do(t, http.MethodGet, tr.srv.URL+"/token?"+q.Encode(), hdr, nil)
	var tok tokenResponse
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(body), &tok); err != nil {
			t.Fatalf("token body %q: %v", body, err)
		}
	}
	return resp.StatusCode, tok
}

func TestTokenFlow(t *testing.T) {
	tr := newTestRegistry(t)
	img := randomImage(t)
	if err := remote.Write(tr.ref(t, "token/app:v1"), img, remote.WithAuth(tokenAuth)); err != nil {
		t.Fatal(err)
	}
	manifest := tr.srv.URL + "/v2/token/app/manifests/v1"

	// 1. Anonymous request: challenge with realm, service and scope.
	resp, _ := do(t, http.MethodHead, manifest, nil, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous HEAD: status %d", resp.StatusCode)
	}
	want := fmt.Sprintf(`Bearer realm="http://%s/token",service="test-registry",scope="repository:token/app:pull"`, tr.host)
	if got := resp.Header.Get("WWW-Authenticate"); got != want {
		t.Fatalf("challenge\n got %s\nwant %s", got, want)
	}
	resp, _ = do(t, http.MethodPut, tr.srv.URL+"/v2/token/app/manifests/v2", nil, strings.NewReader("{}"))
	wantPush := fmt.Sprintf(`Bearer realm="http://%s/token",service="test-registry",scope="repository:token/app:pull,push"`, tr.host)
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || got != wantPush {
		t.Fatalf("push challenge: status %d, %s", resp.StatusCode, got)
	}

	// 2. Token endpoint: wrong credentials are refused.
	if code, _ := getToken(t, tr, basicHeader(tokenUser, "wrong"), "repository:token/app:pull"); code != http.StatusUnauthorized {
		t.Fatalf("token with wrong password: status %d", code)
	}

	// 3. Right credentials: a token with all three fields.
	code, tok := getToken(t, tr, basicHeader(tokenUser, tokenPW), "repository:token/app:pull")
	if code != http.StatusOK || tok.Token == "" || tok.AccessToken != tok.Token || tok.ExpiresIn <= 0 {
		t.Fatalf("token: status %d, %+v", code, tok)
	}
	code, tok2 := getToken(t, tr, basicHeader(tokenUser, tokenPW), "repository:token/app:pull")
	if code != http.StatusOK || tok2.Token == tok.Token {
		t.Fatalf("tokens are not random: %q twice", tok.Token)
	}

	// 4. The token pulls the manifest, and only what was granted.
	resp, body := do(t, http.MethodGet, manifest, bearerHeader(tok.Token), nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Docker-Content-Digest") != mustDigest(t, img).String() {
		t.Fatalf("GET with token: status %d digest %q body %s", resp.StatusCode, resp.Header.Get("Docker-Content-Digest"), body)
	}
	resp, _ = do(t, http.MethodPut, tr.srv.URL+"/v2/token/app/manifests/v2", bearerHeader(tok.Token), strings.NewReader("{}"))
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Fatalf("push with a pull token: status %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	resp, _ = do(t, http.MethodHead, tr.srv.URL+"/v2/token/other/manifests/v1", bearerHeader(tok.Token), nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("token used for another repository: status %d", resp.StatusCode)
	}
	resp, _ = do(t, http.MethodHead, manifest, bearerHeader("0123456789abcdef"), nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("forged token: status %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	// Basic credentials are no substitute for a token under token/.
	resp, _ = do(t, http.MethodHead, manifest, basicHeader(tokenUser, tokenPW), nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Basic auth under token/: status %d", resp.StatusCode)
	}

	// 5. Anonymous and basic-user requests for token/ scopes are refused;
	// a request for several scopes gets only those it may have.
	for what, hdr := range map[string]map[string]string{"anonymous": nil, "basic user": basicHeader(basicUser, basicPW)} {
		if code, _ := getToken(t, tr, hdr, "repository:token/app:pull"); code != http.StatusUnauthorized {
			t.Fatalf("%s token request for token/: status %d", what, code)
		}
	}
	code, part := getToken(t, tr, basicHeader(basicUser, basicPW), "repository:basic/app:pull", "repository:token/app:pull")
	if code != http.StatusOK {
		t.Fatalf("partial grant: status %d", code)
	}
	if resp, _ = do(t, http.MethodHead, manifest, bearerHeader(part.Token), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("basic-user token under token/: status %d", resp.StatusCode)
	}
	if resp, _ = do(t, http.MethodHead, tr.srv.URL+"/v2/basic/app/manifests/v1", bearerHeader(part.Token), nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("basic-user token under basic/ (no such image): status %d, want 404", resp.StatusCode)
	}

	// 6. The OAuth2 password grant that containerd tries first.
	form := url.Values{
		"grant_type": {"password"}, "username": {tokenUser}, "password": {tokenPW},
		"scope": {"repository:token/app:pull"}, "service": {"test-registry"}, "client_id": {"containerd-client"},
	}
	resp, body = do(t, http.MethodPost, tr.srv.URL+"/token", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, strings.NewReader(form.Encode()))
	var otok tokenResponse
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &otok) != nil || otok.AccessToken == "" {
		t.Fatalf("oauth token: status %d body %s", resp.StatusCode, body)
	}
	if resp, _ = do(t, http.MethodHead, manifest, bearerHeader(otok.AccessToken), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD with oauth token: status %d", resp.StatusCode)
	}
	form.Set("password", "wrong")
	resp, _ = do(t, http.MethodPost, tr.srv.URL+"/token", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, strings.NewReader(form.Encode()))
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("oauth token with wrong password: status %d", resp.StatusCode)
	}

	// 7. Tokens expire.
	tr.h.mu.Lock()
	tr.h.now = func() time.Time { return time.Now().Add(DefaultTokenTTL + time.Minute) }
	tr.h.mu.Unlock()
	resp, _ = do(t, http.MethodHead, manifest, bearerHeader(tok.Token), nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Fatalf("expired token: status %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

func TestBasicChallengeAndPing(t *testing.T) {
	tr := newTestRegistry(t)
	if err := remote.Write(tr.ref(t, "basic/app:v1"), randomImage(t), remote.WithAuth(basicAuth)); err != nil {
		t.Fatal(err)
	}
	manifest := tr.srv.URL + "/v2/basic/app/manifests/v1"
	resp, _ := do(t, http.MethodHead, manifest, nil, nil)
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="test-registry"` {
		t.Fatalf("anonymous HEAD under basic/: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, _ = do(t, http.MethodHead, manifest, basicHeader(basicUser, basicPW), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD with Basic auth: %d", resp.StatusCode)
	}
	if resp, _ = do(t, http.MethodHead, manifest, basicHeader(basicUser, "wrong"), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("HEAD with wrong Basic auth: %d", resp.StatusCode)
	}
	if resp, _ = do(t, http.MethodHead, tr.srv.URL+"/v2/basic/app/manifests/missing", basicHeader(basicUser, basicPW), nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("HEAD missing tag: %d", resp.StatusCode)
	}

	// Ping: anonymous gets a Bearer challenge; credentials or a token get 200.
	ping := tr.srv.URL + "/v2/"
	resp, _ = do(t, http.MethodGet, ping, nil, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer realm=") {
		t.Fatalf("anonymous ping: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp.Header.Get("Docker-Distribution-API-Version") != "registry/2.0" {
		t.Fatalf("ping lacks the API version header")
	}
	for _, hdr := range []map[string]string{basicHeader(basicUser, basicPW), basicHeader(tokenUser, tokenPW)} {
		if resp, _ = do(t, http.MethodGet, ping, hdr, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("ping with credentials: %d", resp.StatusCode)
		}
	}
	if resp, _ = do(t, http.MethodGet, ping, basicHeader(basicUser, "wrong"), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("ping with wrong credentials: %d", resp.StatusCode)
	}
	_, tok := getToken(t, tr, nil, "repository:public/x:pull")
	if resp, _ = do(t, http.MethodGet, ping, bearerHeader(tok.Token), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("ping with token: %d", resp.StatusCode)
	}
}

func TestRepoFromPath(t *testing.T) {
	for p, want := range map[string]string{
		"/v2/public/a/b/manifests/latest":         "public/a/b",
		"/v2/basic/x/blobs/sha256:abc":            "basic/x",
		"/v2/basic/x/blobs/uploads/":              "basic/x",
		"/v2/basic/x/blobs/uploads/123":           "basic/x",
		"/v2/token/x/tags/list":                   "token/x",
		"/v2/token/x/referrers/sha256:abc":        "token/x",
		"/v2/token/manifests/manifests/v1":        "token/manifests",
		"/v2/public/blobs/blobs/uploads/99":       "public/blobs",
		"/v2/nothing":                             "",
		"/v2/manifests/v1":                        "",
		"/v2/public/x/unknown/v1":                 "",
		"/v2/public/x/tags/other":                 "",
		"/v2/public/x/blobs/uploads/1/extra/more": "",
	} {
		got, ok := repoFromPath(p)
		if got != want || ok != (want != "") {
			t.Errorf("repoFromPath(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	if _, err := New(Options{BasicUser: "a", BasicPassword: "b"}); err == nil {
		t.Fatal("missing token credentials accepted")
	}
	if _, err := New(Options{TokenUser: "a", TokenPassword: "b"}); err == nil {
		t.Fatal("missing basic credentials accepted")
	}
}

// newSlowRegistry is newTestRegistry with the given hold for blobs under slow/.
func newSlowRegistry(t *testing.T, hold time.Duration) *testRegistry {
	t.Helper()
	logs := &logBuffer{}
	h, err := New(Options{
		BasicUser: basicUser, BasicPassword: basicPW, TokenUser: tokenUser, TokenPassword: tokenPW,
		Logger:   slog.New(slog.NewTextHandler(logs, nil)),
		SlowHold: hold,
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
	return &testRegistry{h: h, srv: srv, host: u.Host, logs: logs}
}

// Under slow/ anyone may push and pull, manifests come at once, and a blob
// only after the hold.
func TestSlowPrefixHoldsBlobs(t *testing.T) {
	const hold = 300 * time.Millisecond
	tr := newSlowRegistry(t, hold)
	img := randomImage(t)
	ref := tr.ref(t, "slow/app:v1")
	if err := remote.Write(ref, img, remote.WithAuth(authn.Anonymous)); err != nil {
		t.Fatalf("anonymous push to slow/: %v", err)
	}
	start := time.Now()
	if _, err := remote.Get(ref, remote.WithAuth(authn.Anonymous)); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if d := time.Since(start); d >= hold {
		t.Errorf("manifest took %s, want it without the hold of %s", d, hold)
	}
	start = time.Now()
	checkRoundTrip(t, ref, authn.Anonymous, img)
	if d := time.Since(start); d < hold {
		t.Errorf("pull with blobs took %s, want at least the hold of %s", d, hold)
	}
	// HEAD of a blob (what a push asks) is not held.
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	dg, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	resp, _ := do(t, http.MethodHead, tr.srv.URL+"/v2/slow/app/blobs/"+dg.String(), nil, nil)
	if resp.StatusCode != http.StatusOK || time.Since(start) >= hold {
		t.Errorf("HEAD blob: status %d after %s, want 200 without the hold", resp.StatusCode, time.Since(start))
	}
}

// A held blob request ends as soon as its client goes away.
func TestSlowPrefixReleasesOnDisconnect(t *testing.T) {
	tr := newSlowRegistry(t, time.Hour)
	img := randomImage(t)
	ref := tr.ref(t, "slow/app:v1")
	if err := remote.Write(ref, img, remote.WithAuth(authn.Anonymous)); err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	dg, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tr.srv.URL+"/v2/slow/app/blobs/"+dg.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("blob GET under slow/ answered %d before the client gave up", resp.StatusCode)
	}
	// The handler notices the disconnect and logs the request.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(tr.logs.String(), "gone while held") {
		if time.Now().After(deadline) {
			t.Fatalf("held request not released after the client went away; log:\n%s", tr.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pushFaultImage pushes a random image anonymously (through the token flow, as a client that
// follows the ping's Bearer challenge does) and returns the blob URLs of its config and layers.
func pushFaultImage(t *testing.T, tr *testRegistry, repo string) []string {
	t.Helper()
	img := randomImage(t)
	if err := remote.Write(tr.ref(t, repo+":v1"), img, remote.WithAuth(authn.Anonymous)); err != nil {
		t.Fatalf("anonymous push to %s: %v", repo, err)
	}
	cfg, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	digests := []v1.Hash{cfg}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	var urls []string
	for _, d := range digests {
		urls = append(urls, tr.srv.URL+"/v2/"+repo+"/blobs/"+d.String())
	}
	return urls
}

// getBlob GETs a blob and checks that a 200 answer carries the blob named in the URL.
func getBlob(t *testing.T, u string) int {
	t.Helper()
	resp, body := do(t, http.MethodGet, u, nil, nil)
	if resp.StatusCode == http.StatusOK {
		want := u[strings.LastIndex(u, "/")+1:]
		h, _, err := v1.SHA256(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if h.String() != want {
			t.Fatalf("GET %s: body has digest %s", u, h)
		}
	}
	return resp.StatusCode
}

// Under flaky/<n>/ the first n GETs of each blob answer 503, counted per blob; manifests and
// HEADs are not affected and not counted.
func TestFlakyPrefixFailsFirstGETsOfEachBlob(t *testing.T) {
	tr := newTestRegistry(t)
	blobs := pushFaultImage(t, tr, "flaky/2/app")
	if resp, _ := do(t, http.MethodGet, tr.srv.URL+"/v2/flaky/2/app/manifests/v1", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("manifest under flaky/: status %d, want 200", resp.StatusCode)
	}
	for _, u := range blobs {
		if resp, _ := do(t, http.MethodHead, u, nil, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("HEAD %s: status %d, want 200", u, resp.StatusCode)
		}
	}
	// Interleave the blobs: each has its own count.
	for round := 1; round <= 4; round++ {
		want := http.StatusServiceUnavailable
		if round > 2 {
			want = http.StatusOK
		}
		for _, u := range blobs {
			if got := getBlob(t, u); got != want {
				t.Fatalf("GET %d of %s: status %d, want %d", round, u, got, want)
			}
		}
	}
	resp, body := do(t, http.MethodGet, strings.Replace(blobs[0], "flaky/2/app", "flaky/0/app", 1), nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("flaky/0/: first GET status %d (%s), want 200", resp.StatusCode, body)
	}
	// The 503 answer is a registry error a client can show.
	resp, body = do(t, http.MethodGet, strings.Replace(blobs[0], "flaky/2/app", "flaky/1/other", 1), nil, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"UNAVAILABLE"`) {
		t.Errorf("flaky/1/other: status %d body %s, want 503 UNAVAILABLE", resp.StatusCode, body)
	}
	if !strings.Contains(tr.logs.String(), "injected 503") {
		t.Errorf("injected faults not logged:\n%s", tr.logs.String())
	}
	for _, bad := range []string{"flaky/app", "flaky/x/app", "flaky/-1/app", "flaky/02/app", "flaky/2/"} {
		resp, body := do(t, http.MethodGet, tr.srv.URL+"/v2/"+bad+"/manifests/v1", nil, nil)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "NAME_UNKNOWN") {
			t.Errorf("%s: status %d body %s, want 404 NAME_UNKNOWN", bad, resp.StatusCode, body)
		}
	}
}

// Under broken/ every GET of a blob answers 500; the manifest is served.
func TestBrokenPrefixFailsEveryBlobGET(t *testing.T) {
	tr := newTestRegistry(t)
	blobs := pushFaultImage(t, tr, "broken/app")
	if resp, _ := do(t, http.MethodGet, tr.srv.URL+"/v2/broken/app/manifests/v1", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("manifest under broken/: status %d, want 200", resp.StatusCode)
	}
	for round := 1; round <= 3; round++ {
		for _, u := range blobs {
			resp, body := do(t, http.MethodGet, u, nil, nil)
			if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "INTERNAL_SERVER_ERROR") {
				t.Fatalf("GET %d of %s: status %d body %s, want 500 INTERNAL_SERVER_ERROR", round, u, resp.StatusCode, body)
			}
		}
	}
	for _, u := range blobs {
		if resp, _ := do(t, http.MethodHead, u, nil, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("HEAD %s: status %d, want 200", u, resp.StatusCode)
		}
	}
}

// Under drop/ the first GET of each blob announces the whole blob, sends half of it and resets
// the connection; later GETs, and a pull after them, get the whole blob.
func TestDropPrefixCutsFirstGETOfEachBlob(t *testing.T) {
	tr := newTestRegistry(t)
	img := randomImage(t)
	ref := tr.ref(t, "drop/app:v1")
	if err := remote.Write(ref, img, remote.WithAuth(authn.Anonymous)); err != nil {
		t.Fatalf("anonymous push to drop/: %v", err)
	}
	blobs := pushFaultImage(t, tr, "drop/other")
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		blobs = append(blobs, tr.srv.URL+"/v2/drop/app/blobs/"+d.String())
	}
	cfg, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	blobs = append(blobs, tr.srv.URL+"/v2/drop/app/blobs/"+cfg.String())

	for _, u := range blobs {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatalf("first GET %s: %v", u, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ContentLength <= 0 {
			t.Fatalf("first GET %s: status %d length %d, want 200 with a length", u, resp.StatusCode, resp.ContentLength)
		}
		// The reset may reach the client before it has read the half that was sent (Linux
		// then drops what is queued): at most half arrives, and the read fails.
		if err == nil || int64(len(got)) > resp.ContentLength/2 {
			t.Fatalf("first GET %s: read %d of %d bytes, err %v; want at most half, then the connection cut", u, len(got), resp.ContentLength, err)
		}
		if code := getBlob(t, u); code != http.StatusOK {
			t.Fatalf("second GET %s: status %d, want 200", u, code)
		}
		_, whole := do(t, http.MethodGet, u, nil, nil)
		if !strings.HasPrefix(whole, string(got)) {
			t.Errorf("first GET %s: the %d bytes sent are not the start of the blob", u, len(got))
		}
	}
	checkRoundTrip(t, ref, authn.Anonymous, img)
	if !strings.Contains(tr.logs.String(), "injected drop") {
		t.Errorf("injected drops not logged:\n%s", tr.logs.String())
	}
}

func TestFlakyCount(t *testing.T) {
	for repo, want := range map[string]int{"flaky/0/a": 0, "flaky/3/a/b": 3, "flaky/12/x": 12} {
		if n, ok := flakyCount(repo); !ok || n != want {
			t.Errorf("flakyCount(%q) = %d, %t; want %d", repo, n, ok, want)
		}
	}
	for _, repo := range []string{"flaky/a", "flaky//a", "flaky/1/", "flaky/+1/a", "flaky/1e3/a"} {
		if n, ok := flakyCount(repo); ok {
			t.Errorf("flakyCount(%q) = %d; want it refused", repo, n)
		}
	}
}

// Under stall/ the blob GETs of a repository are held until the first held client goes away;
// then every blob of the repository is served at once, while other repositories still hold.
func TestStallPrefixHoldsUntilFirstClientLeaves(t *testing.T) {
	tr := newSlowRegistry(t, time.Hour)
	blobs := pushFaultImage(t, tr, "stall/app")
	other := pushFaultImage(t, tr, "stall/other")

	// holdAndLeave GETs u, waits until the registry says it holds the request, then gives up.
	holdAndLeave := func(u string, released int) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				err = fmt.Errorf("answered %d", resp.StatusCode)
			}
			errc <- err
		}()
		held := "registry request held\" method=GET path=" + strings.TrimPrefix(u, tr.srv.URL)
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(tr.logs.String(), held) {
			if time.Now().After(deadline) {
				t.Fatalf("GET %s not held; log:\n%s", u, tr.logs.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("GET %s: %v, want it held until cancelled", u, err)
		}
		// The release happens when the handler sees the client gone, which it logs.
		deadline = time.Now().Add(5 * time.Second)
		for strings.Count(tr.logs.String(), "gone while held") < released {
			if time.Now().After(deadline) {
				t.Fatalf("held request not released after the client went away; log:\n%s", tr.logs.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	// Only the config of stall/app is asked for and abandoned: afterwards every blob of the
	// repository comes at once, the layer too.
	holdAndLeave(blobs[0], 1)
	for _, u := range blobs {
		if code := getBlob(t, u); code != http.StatusOK {
			t.Fatalf("GET %s after the release: status %d, want 200 at once", u, code)
		}
	}
	// stall/other is still held.
	holdAndLeave(other[1], 2)
	if code := getBlob(t, other[0]); code != http.StatusOK {
		t.Fatalf("GET %s after the release: status %d, want 200 at once", other[0], code)
	}
}
