// Package registry is an OCI registry for tests. It wraps the registry of
// github.com/google/go-containerregistry/pkg/registry with an access policy
// chosen by the first component of the repository name:
//
//   - public/...  anonymous pull and push;
//   - basic/...   pull and push need the configured Basic user and password;
//   - token/...   pull and push need a Bearer token from the /token endpoint,
//     which is issued to the configured token user and password;
//   - slow/...    anonymous pull and push like public/, but a GET of a blob
//     is held back (nothing is sent) until Options.SlowHold has passed or
//     the client goes away, so a pull of an image under slow/ stays under
//     way until the client cancels it (tests of cancellation).
//
// Four more anonymous prefixes inject registry faults into the GETs of blobs
// (not into manifests, HEADs or uploads, so pushing works as under public/).
// Under flaky/ and drop/ the GETs of each blob are counted apart, by
// repository and digest, from the start of the process:
//
//   - flaky/<n>/... the first n GETs of each blob answer 503 Service
//     Unavailable (code UNAVAILABLE); later ones are served normally. n is
//     the decimal count in the second component of the name, so
//     flaky/2/app:v1 fails twice per blob and then serves it. A name under
//     flaky/ without a count, or with nothing after it, is answered with 404
//     NAME_UNKNOWN.
//   - drop/...     the first GET of each blob answers 200 with the full
//     Content-Length but sends only the first half of the body, then resets
//     the connection (TCP RST); later GETs are served normally. The body is
//     buffered in memory for this, so keep images under drop/ small.
//   - broken/...   every GET of a blob answers 500 Internal Server Error (code
//     INTERNAL_SERVER_ERROR), so a pull can never succeed.
//   - stall/...    GETs of the blobs of a repository are held back as under
//     slow/ (until Options.SlowHold has passed or the client goes away) until
//     the first such hold has ended; from then on the repository's blobs are
//     served at once. A pull under stall/ stays under way until its client
//     goes away, and the next pull of the image goes through, whichever blobs
//     the first one had asked for (tests of a client killed mid-pull).
//
// The start of every hold (slow/ and stall/) is logged at once as "registry
// request held", so a test can tell that a pull has reached the registry.
//
// Any other repository name is answered with 404 NAME_UNKNOWN.
//
// # Authentication flows
//
// Requests under basic/ without valid credentials get
// `401` with `WWW-Authenticate: Basic realm="<Name>"`. Requests under token/
// without a valid token get
// `401` with `WWW-Authenticate: Bearer realm="http://<host>/token",service="<Name>",scope="repository:<repo>:pull"`
// (`pull,push` for writes). Clients that react to a challenge on any request,
// such as containerd's CRI image puller, therefore use Basic auth under basic/
// and the token flow under token/.
//
// Clients that decide the authentication scheme once from the /v2/ ping, such
// as go-containerregistry's remote package, cannot follow a different scheme
// per repository. The ping therefore answers an anonymous request with a
// Bearer challenge (like Docker Hub), and the /token endpoint is a small
// authorization server for all three prefixes: it grants public/ scopes to
// anyone (including anonymous requests), basic/ scopes to the Basic user and
// token/ scopes to the token user. A Bearer token granted for a basic/
// repository is accepted there in place of Basic credentials, so both kinds
// of client need exactly the configured credentials for each prefix. Wrong
// credentials are always rejected with 401, at the /token endpoint or at the
// registry.
//
// The /token endpoint accepts `GET` with optional Basic credentials and
// `scope`/`service` query parameters (the Docker token protocol) and the OAuth2
// `POST` form with `grant_type=password` (what containerd tries first). It
// answers `{"token":..., "access_token":..., "expires_in":..., "issued_at":...}`.
// Tokens are random strings held in memory, valid for Options.TokenTTL, and
// grant only the repositories (not prefixes) and actions that were requested
// and allowed. A token request none of whose repository scopes can be granted
// (anonymous or basic-user credentials asking for token/..., say) is refused
// with 401, so clients report "401 Unauthorized".
//
// # Storage
//
// Blobs are stored on disk in Options.BlobDir (shared by all repositories and
// prefixes, content addressed), so large layers are not kept in memory once
// uploaded. Note that the underlying registry buffers a chunked (PATCH) upload
// in memory until it is committed. Manifests and tags are kept in memory only:
// they are lost when the process exits, and test images are expected to be
// pushed again at every cluster start. Pushing them again is cheap because the
// blobs already on disk are found by their digest.
package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// Repository prefixes served by the registry.
const (
	PublicPrefix = "public/"
	BasicPrefix  = "basic/"
	TokenPrefix  = "token/"
	SlowPrefix   = "slow/"
	FlakyPrefix  = "flaky/"
	DropPrefix   = "drop/"
	BrokenPrefix = "broken/"
	StallPrefix  = "stall/"
)

// anonymousPrefixes are the prefixes anyone may pull from and push to.
var anonymousPrefixes = []string{PublicPrefix, SlowPrefix, FlakyPrefix, DropPrefix, BrokenPrefix, StallPrefix}

// allPrefixes are every prefix served, for error messages.
var allPrefixes = []string{PublicPrefix, BasicPrefix, TokenPrefix, SlowPrefix, FlakyPrefix, DropPrefix, BrokenPrefix, StallPrefix}

// Defaults used when the corresponding Options field is empty.
const (
	DefaultName     = "kruise-test-registry"
	DefaultTokenTTL = time.Hour
	DefaultSlowHold = 10 * time.Minute
)

// Options configures a registry handler.
type Options struct {
	// Name is the service name in Bearer challenges. Default DefaultName.
	Name string
	// BasicUser and BasicPassword protect repositories under basic/.
	BasicUser, BasicPassword string
	// TokenUser and TokenPassword are checked by the /token endpoint before it
	// grants access to repositories under token/.
	TokenUser, TokenPassword string
	// Realm is the token endpoint URL in Bearer challenges. Default
	// "http://<Host header of the request>/token".
	Realm string
	// TokenTTL is how long an issued token is valid. Default DefaultTokenTTL.
	TokenTTL time.Duration
	// BlobDir is where blobs are stored; it is created if missing. Empty
	// means blobs are kept in memory (fine for small unit tests).
	BlobDir string
	// Logger receives one record per request. Default slog.Default().
	Logger *slog.Logger
	// SlowHold is how long a GET of a blob under slow/ (or stall/, until
	// the repository is released) is held back before it is served (unless the
	// client goes away first). Default DefaultSlowHold.
	SlowHold time.Duration
}

// access is what a request needs: an action on a repository.
type access struct {
	repo   string
	action string // "pull" or "push"
}

// grant is what an issued token allows.
type grant struct {
	subject string
	expires time.Time
	repos   map[string]map[string]bool // repository -> actions
}

// Handler is the registry http.Handler returned by New.
type Handler struct {
	opts  Options
	inner http.Handler
	log   *slog.Logger
	now   func() time.Time

	mu     sync.Mutex
	tokens map[string]*grant
	// blobGETs counts the GETs of each blob path under flaky/ and drop/.
	blobGETs map[string]int
	// released are the repositories under stall/ whose first hold has ended.
	released map[string]bool
}

// New returns a registry handler to be served at the site root.
func New(opts Options) (*Handler, error) {
	if opts.BasicUser == "" || opts.BasicPassword == "" {
		return nil, errors.New("registry: BasicUser and BasicPassword must be set")
	}
	if opts.TokenUser == "" || opts.TokenPassword == "" {
		return nil, errors.New("registry: TokenUser and TokenPassword must be set")
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = DefaultTokenTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SlowHold <= 0 {
		opts.SlowHold = DefaultSlowHold
	}
	inner := []ggcrregistry.Option{
		// The inner registry logs every request on its own; keep that at debug level.
		ggcrregistry.Logger(slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug)),
		ggcrregistry.WithReferrersSupport(true),
	}
	if opts.BlobDir != "" {
		if err := os.MkdirAll(opts.BlobDir, 0o755); err != nil {
			return nil, fmt.Errorf("registry: blob dir: %w", err)
		}
		inner = append(inner, ggcrregistry.WithBlobHandler(ggcrregistry.NewDiskBlobHandler(opts.BlobDir)))
	}
	return &Handler{
		opts:     opts,
		inner:    ggcrregistry.New(inner...),
		log:      opts.Logger,
		now:      time.Now,
		tokens:   map[string]*grant{},
		blobGETs: map[string]int{},
		released: map[string]bool{},
	}, nil
}

// Serve serves h on l until ctx is done, then shuts the server down (waiting
// at most 5 seconds for requests in flight). It returns nil after a shutdown
// caused by ctx.
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	rec.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	subject := h.route(rec, r)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", rec.status),
		slog.Int64("bytes", rec.written),
		slog.Duration("duration", time.Since(start)),
		slog.String("auth", subject),
		slog.String("remote", r.RemoteAddr),
	}
	if r.URL.Path == "/token" {
		attrs = append(attrs, slog.String("scope", strings.Join(r.URL.Query()["scope"], " ")))
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "registry request", attrs...)
}

// route authorizes and serves one request. It returns who the request was
// authorized as, for the log.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) string {
	p := r.URL.Path
	switch {
	case p == "/token":
		return h.serveToken(w, r)
	case p == "/v2" || p == "/v2/":
		return h.servePing(w, r)
	case p == "/v2/_catalog":
		// The catalog lists repository names only; it is open to everyone.
		h.inner.ServeHTTP(w, r)
		return "anonymous"
	case strings.HasPrefix(p, "/v2/"):
	default:
		writeError(w, http.StatusNotFound, "NOT_FOUND", "not a registry endpoint")
		return "-"
	}
	repo, ok := repoFromPath(p)
	if !ok {
		// Let the inner registry produce its error for malformed paths.
		h.inner.ServeHTTP(w, r)
		return "-"
	}
	need := access{repo: repo, action: "push"}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		need.action = "pull"
	}
	var subject string
	switch {
	case strings.HasPrefix(repo, PublicPrefix):
		subject = "anonymous"
	case strings.HasPrefix(repo, SlowPrefix):
		subject = "anonymous"
		if r.Method == http.MethodGet && isBlobPath(p) && !h.hold(r) {
			// The client went away while held: nothing to answer.
			return subject + "(gone while held)"
		}
	case strings.HasPrefix(repo, FlakyPrefix):
		subject = "anonymous"
		n, ok := flakyCount(repo)
		if !ok {
			writeError(w, http.StatusNotFound, "NAME_UNKNOWN",
				fmt.Sprintf("repository %q under %s must be named %s<n>/<name> with a decimal count n", repo, FlakyPrefix, FlakyPrefix))
			return "-"
		}
		if r.Method == http.MethodGet && isBlobPath(p) {
			if k := h.countBlobGET(p); k <= n {
				writeError(w, http.StatusServiceUnavailable, "UNAVAILABLE",
					fmt.Sprintf("injected fault: GET %d of %d of this blob under %s fails", k, n, FlakyPrefix))
				return subject + "(injected 503)"
			}
		}
	case strings.HasPrefix(repo, DropPrefix):
		subject = "anonymous"
		if r.Method == http.MethodGet && isBlobPath(p) && h.countBlobGET(p) == 1 {
			return subject + h.serveDropped(w, r)
		}
	case strings.HasPrefix(repo, BrokenPrefix):
		subject = "anonymous"
		if r.Method == http.MethodGet && isBlobPath(p) {
			writeError(w, http.StatusInternalServerError, "INTERNAL_SERVER_ERROR",
				"injected fault: every GET of a blob under "+BrokenPrefix+" fails")
			return subject + "(injected 500)"
		}
	case strings.HasPrefix(repo, StallPrefix):
		subject = "anonymous"
		if r.Method == http.MethodGet && isBlobPath(p) && h.stalled(repo) {
			served := h.hold(r)
			h.releaseStall(repo)
			if !served {
				return subject + "(gone while held)"
			}
		}
	case strings.HasPrefix(repo, BasicPrefix):
		s, ok := h.authorizeBasic(r, need)
		if !ok {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q", h.opts.Name))
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required: Basic credentials of the basic user")
			return s
		}
		subject = s
	case strings.HasPrefix(repo, TokenPrefix):
		s, challengeErr := h.authorizeBearer(r, need)
		if challengeErr != "" {
			h.bearerChallenge(w, r, need, challengeErr)
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required: Bearer token from the token endpoint")
			return s
		}
		subject = s
	default:
		writeError(w, http.StatusNotFound, "NAME_UNKNOWN",
			fmt.Sprintf("repository %q must start with one of %s", repo, strings.Join(allPrefixes, ", ")))
		return "-"
	}
	h.inner.ServeHTTP(w, r)
	return subject
}

// servePing answers GET /v2/. Anonymous requests get a Bearer challenge (see
// the package documentation); requests with valid credentials or a valid
// token get 200.
func (h *Handler) servePing(w http.ResponseWriter, r *http.Request) string {
	authz := r.Header.Get("Authorization")
	if authz == "" {
		h.bearerChallenge(w, r, access{}, "")
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")
		return "anonymous"
	}
	if user, pw, ok := r.BasicAuth(); ok {
		subjects := h.authenticate(user, pw)
		if len(subjects) == 0 {
			h.bearerChallenge(w, r, access{}, "")
			writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "invalid credentials")
			return "basic:" + user + "(invalid)"
		}
		h.inner.ServeHTTP(w, r)
		return strings.Join(subjects, ",") + ":" + user
	}
	if g := h.lookupToken(r); g != nil {
		h.inner.ServeHTTP(w, r)
		return "bearer:" + g.subject
	}
	h.bearerChallenge(w, r, access{}, "invalid_token")
	writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "invalid or expired token")
	return "bearer(invalid)"
}

// authorizeBasic checks a request under basic/: Basic credentials of the
// basic user, or a token granted for the repository and action.
func (h *Handler) authorizeBasic(r *http.Request, need access) (string, bool) {
	if user, pw, ok := r.BasicAuth(); ok {
		if equal(user, h.opts.BasicUser) && equal(pw, h.opts.BasicPassword) {
			return "basic:" + user, true
		}
		return "basic:" + user + "(invalid)", false
	}
	if g := h.lookupToken(r); g != nil {
		if g.repos[need.repo][need.action] {
			return "bearer:" + g.subject, true
		}
		return "bearer:" + g.subject + "(insufficient scope)", false
	}
	if r.Header.Get("Authorization") != "" {
		return "invalid", false
	}
	return "anonymous", false
}

// authorizeBearer checks a request under token/. It returns the subject for
// the log and "" when the request is allowed; otherwise the error parameter of
// the challenge to send ("none" for a challenge without one).
func (h *Handler) authorizeBearer(r *http.Request, need access) (string, string) {
	authz := r.Header.Get("Authorization")
	if authz == "" {
		return "anonymous", "none"
	}
	g := h.lookupToken(r)
	if g == nil {
		return "bearer(invalid)", "invalid_token"
	}
	if !g.repos[need.repo][need.action] {
		return "bearer:" + g.subject + "(insufficient scope)", "insufficient_scope"
	}
	return "bearer:" + g.subject, ""
}

// bearerChallenge sets the WWW-Authenticate header of a 401 answer. An empty
// need.repo gives a challenge without scope (the ping); errParam "" or "none"
// gives one without an error parameter.
func (h *Handler) bearerChallenge(w http.ResponseWriter, r *http.Request, need access, errParam string) {
	realm := h.opts.Realm
	if realm == "" {
		realm = "http://" + r.Host + "/token"
	}
	c := fmt.Sprintf("Bearer realm=%q,service=%q", realm, h.opts.Name)
	if need.repo != "" {
		actions := "pull"
		if need.action == "push" {
			actions = "pull,push"
		}
		c += fmt.Sprintf(",scope=%q", "repository:"+need.repo+":"+actions)
	}
	if errParam != "" && errParam != "none" {
		c += fmt.Sprintf(",error=%q", errParam)
	}
	w.Header().Set("WWW-Authenticate", c)
}

// authenticate returns the identities ("basic", "token") that user and pw
// match; both when the two are configured alike.
func (h *Handler) authenticate(user, pw string) []string {
	var subjects []string
	if equal(user, h.opts.BasicUser) && equal(pw, h.opts.BasicPassword) {
		subjects = append(subjects, "basic")
	}
	if equal(user, h.opts.TokenUser) && equal(pw, h.opts.TokenPassword) {
		subjects = append(subjects, "token")
	}
	return subjects
}

// lookupToken returns the unexpired grant of the request's Bearer token.
func (h *Handler) lookupToken(r *http.Request) *grant {
	authz := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(authz) <= len(prefix) || !strings.EqualFold(authz[:len(prefix)], prefix) {
		return nil
	}
	tok := strings.TrimSpace(authz[len(prefix):])
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.tokens[tok]
	if !ok || !h.now().Before(g.expires) {
		return nil
	}
	return g
}

// tokenResponse is the JSON body of a token answer.
type tokenResponse struct {
	Token       string `json:"token"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
	IssuedAt    string `json:"issued_at"`
}

// serveToken is the token endpoint (Docker token protocol and OAuth2 password grant).
func (h *Handler) serveToken(w http.ResponseWriter, r *http.Request) string {
	var (
		user, pw  string
		hasCreds  bool
		scopes    []string
		subjectOf = "anonymous"
	)
	switch r.Method {
	case http.MethodGet:
		user, pw, hasCreds = r.BasicAuth()
		if !hasCreds && r.Header.Get("Authorization") != "" {
			h.tokenUnauthorized(w, "unsupported authorization scheme")
			return "invalid"
		}
		scopes = r.URL.Query()["scope"]
	case http.MethodPost:
		if err := r.ParseForm(); err != nil {
			writeOAuthError(w, http.StatusBadRequest, "invalid_request", err.Error())
			return "-"
		}
		switch gt := r.PostForm.Get("grant_type"); gt {
		case "password":
			user, pw = r.PostForm.Get("username"), r.PostForm.Get("password")
			hasCreds = true
		case "":
			user, pw, hasCreds = r.BasicAuth()
		default:
			writeOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", "only grant_type=password is supported")
			return "-"
		}
		scopes = r.PostForm["scope"]
	default:
		w.Header().Set("Allow", "GET, POST")
		writeError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "use GET or POST")
		return "-"
	}
	var subjects []string
	if hasCreds {
		subjects = h.authenticate(user, pw)
		if len(subjects) == 0 {
			h.tokenUnauthorized(w, "invalid username or password")
			return "basic:" + user + "(invalid)"
		}
		subjectOf = strings.Join(subjects, ",") + ":" + user
	}
	g := &grant{
		subject: subjectOf,
		expires: h.now().Add(h.opts.TokenTTL),
		repos:   map[string]map[string]bool{},
	}
	var requested []string
	for _, s := range scopes {
		for _, one := range strings.Fields(s) {
			repo, actions, ok := parseRepositoryScope(one)
			if !ok {
				continue
			}
			if knownPrefix(repo) {
				// Other names get 404 from the registry whatever the token.
				requested = append(requested, one)
			}
			if !allowed(repo, subjects) {
				continue
			}
			if g.repos[repo] == nil {
				g.repos[repo] = map[string]bool{}
			}
			for _, a := range actions {
				if a == "*" {
					g.repos[repo]["pull"] = true
					g.repos[repo]["push"] = true
				}
				g.repos[repo][a] = true
			}
		}
	}
	if len(requested) > 0 && len(g.repos) == 0 {
		// Nothing asked for can be granted: refuse outright, so that clients
		// report a 401 rather than a useless token.
		h.tokenUnauthorized(w, fmt.Sprintf("access denied to %s for %s", strings.Join(requested, " "), subjectOf))
		return subjectOf + "(denied)"
	}
	tok, err := randomToken()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL_SERVER_ERROR", err.Error())
		return subjectOf
	}
	h.mu.Lock()
	now := h.now()
	for k, old := range h.tokens {
		if !now.Before(old.expires) {
			delete(h.tokens, k)
		}
	}
	h.tokens[tok] = g
	h.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(tokenResponse{
		Token:       tok,
		AccessToken: tok,
		ExpiresIn:   int(h.opts.TokenTTL / time.Second),
		IssuedAt:    now.UTC().Format(time.RFC3339),
	})
	return subjectOf
}

func (h *Handler) tokenUnauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", fmt.Sprintf("Basic realm=%q", h.opts.Name+" token service"))
	writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", msg)
}

// allowed tells whether identities may be granted access to repo.
func allowed(repo string, subjects []string) bool {
	has := func(s string) bool {
		for _, x := range subjects {
			if x == s {
				return true
			}
		}
		return false
	}
	switch {
	case hasAnyPrefix(repo, anonymousPrefixes):
		return true
	case strings.HasPrefix(repo, BasicPrefix):
		return has("basic")
	case strings.HasPrefix(repo, TokenPrefix):
		return has("token")
	}
	return false
}

func knownPrefix(repo string) bool {
	return hasAnyPrefix(repo, allPrefixes)
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// flakyCount parses the n of a repository named flaky/<n>/<name>.
func flakyCount(repo string) (int, bool) {
	rest := strings.TrimPrefix(repo, FlakyPrefix)
	count, name, ok := strings.Cut(rest, "/")
	if !ok || name == "" || count == "" {
		return 0, false
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 0 || strconv.Itoa(n) != count {
		return 0, false
	}
	return n, true
}

// countBlobGET counts one more GET of the blob at path p and returns the
// count including this one.
func (h *Handler) countBlobGET(p string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.blobGETs[p]++
	return h.blobGETs[p]
}

// stalled reports whether blob GETs of repo (under stall/) are still held.
func (h *Handler) stalled(repo string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.released[repo]
}

// releaseStall serves the blobs of repo at once from now on.
func (h *Handler) releaseStall(repo string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released[repo] = true
}

// serveDropped answers a blob GET under drop/: the inner registry's answer
// with its headers and the first half of its body, then the connection is
// reset. Answers other than a 200 with a body are passed on whole. It
// returns a note for the log.
func (h *Handler) serveDropped(w http.ResponseWriter, r *http.Request) string {
	inner := &bufferWriter{header: http.Header{}}
	h.inner.ServeHTTP(inner, r)
	body := inner.body.Bytes()
	for k, v := range inner.header {
		w.Header()[k] = v
	}
	if inner.status != http.StatusOK || len(body) == 0 {
		w.WriteHeader(inner.status)
		_, _ = w.Write(body)
		return "(not dropped: status " + strconv.Itoa(inner.status) + ")"
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body[:len(body)/2])
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	conn, _, err := rc.Hijack()
	if err != nil {
		// Without a connection of our own (HTTP/2, say), let the server
		// abort the response instead.
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0) // close with RST, not an orderly FIN
	}
	_ = conn.Close()
	return fmt.Sprintf("(injected drop after %d of %d bytes)", len(body)/2, len(body))
}

// bufferWriter is an http.ResponseWriter that keeps the answer in memory.
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }

func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferWriter) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// isBlobPath reports whether p is /v2/<name>/blobs/<digest> (not an upload).
func isBlobPath(p string) bool {
	elems := strings.Split(strings.TrimSuffix(strings.TrimPrefix(p, "/v2/"), "/"), "/")
	n := len(elems)
	return n >= 3 && elems[n-2] == "blobs" && elems[n-1] != "uploads"
}

// hold waits SlowHold, or until the request's client goes away. It reports
// whether the request should still be served. It logs the start of the hold
// ("registry request held"); the end is logged with the request.
func (h *Handler) hold(r *http.Request) bool {
	// Logged at once, so that a test can see the request is being held.
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "registry request held",
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Duration("hold", h.opts.SlowHold),
		slog.String("remote", r.RemoteAddr),
	)
	t := time.NewTimer(h.opts.SlowHold)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// parseRepositoryScope parses "repository:<name>:<action>[,<action>...]".
func parseRepositoryScope(s string) (string, []string, bool) {
	first := strings.Index(s, ":")
	last := strings.LastIndex(s, ":")
	if first < 0 || last <= first || s[:first] != "repository" {
		return "", nil, false
	}
	repo := s[first+1 : last]
	if repo == "" {
		return "", nil, false
	}
	return repo, strings.Split(s[last+1:], ","), true
}

// repoFromPath extracts the repository name from a /v2/<name>/... path.
func repoFromPath(p string) (string, bool) {
	elems := strings.Split(strings.TrimSuffix(strings.TrimPrefix(p, "/v2/"), "/"), "/")
	n := len(elems)
	for i := n - 2; i >= 1; i-- {
		var match bool
		switch elems[i] {
		case "manifests", "referrers":
			match = i == n-2
		case "tags":
			match = i == n-2 && elems[n-1] == "list"
		case "blobs":
			match = i == n-2 || (elems[i+1] == "uploads" && i == n-3)
		}
		if match {
			name := strings.Join(elems[:i], "/")
			return name, name != ""
		}
	}
	return "", false
}

func equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]string{{"code": code, "message": msg}},
	})
}

func writeOAuthError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": msg})
}

// recorder remembers the status and size of a response for the log.
type recorder struct {
	http.ResponseWriter
	status  int
	written int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.written += int64(n)
	return n, err
}

// ReadFrom keeps the underlying writer's sendfile path for blobs on disk.
func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := r.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{r.ResponseWriter}, src)
	}
	r.written += n
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
