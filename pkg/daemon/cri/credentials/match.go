package credentials

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
)

// dockerHubHost is the registry host of images named without one
// ("nginx", "library/nginx"). index.docker.io is an alias of it.
const dockerHubHost = "docker.io"

// location is a parsed registry location: a host split into labels, an
// optional port and a path. Patterns (matchImages entries, auth keys of
// pull secrets and plugin responses) and images both parse into one.
type location struct {
	labels []string // lower-cased host labels; a pattern's may hold globs
	port   string   // "" when absent
	path   string   // URL path, "" or starting with "/"
}

// parseLocation parses s the way the kubelet parses matchImages entries and
// keyring keys: as a URL, adding "https://" when there is no http(s)
// scheme. Hosts are lower-cased (host names are case-insensitive; the
// kubelet compares them as written).
func parseLocation(s string) (location, error) {
	rest := s
	for _, scheme := range []string{"https://", "http://"} {
		if len(rest) >= len(scheme) && strings.EqualFold(rest[:len(scheme)], scheme) {
			rest = rest[len(scheme):]
			break
		}
	}
	if rest == "" {
		return location{}, errors.New("empty")
	}
	u, err := url.Parse("https://" + rest)
	if err != nil {
		// url.Parse's error repeats the input; the caller names it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return location{}, err
	}
	switch {
	case u.User != nil:
		return location{}, errors.New("must not hold user information")
	case u.RawQuery != "" || u.ForceQuery:
		return location{}, errors.New("must not hold a query ('?')")
	case strings.Contains(rest, "#"): // an empty fragment too
		return location{}, errors.New("must not hold a fragment ('#')")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return location{}, errors.New("has no host")
	}
	return location{labels: strings.Split(host, "."), port: u.Port(), path: u.Path}, nil
}

// parsePattern parses a matchImages-style pattern and checks its globs.
func parsePattern(pattern string) (location, error) {
	loc, err := parseLocation(pattern)
	if err != nil {
		return location{}, err
	}
	for _, label := range loc.labels {
		if _, err := filepath.Match(label, ""); err != nil {
			return location{}, fmt.Errorf("host label %q: %w", label, err)
		}
	}
	return loc, nil
}

// matches reports whether the image location img matches the pattern p: the
// same number of host labels, each matched by the pattern's label as a
// filepath.Match glob; equal ports (both absent or the same); and the
// pattern's path a prefix of the image's path. Like the kubelet, the prefix
// is a string prefix: "registry.io/foo" matches "registry.io/foobar".
func (p location) matches(img location) bool {
	if p.port != img.port || len(p.labels) != len(img.labels) {
		return false
	}
	if !strings.HasPrefix(img.path, p.path) {
		return false
	}
	for i, label := range p.labels {
		if ok, err := filepath.Match(label, img.labels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

// ValidatePattern reports whether pattern is a usable matchImages entry:
// an optional http(s) scheme, a host whose labels may hold globs, an
// optional numeric port and an optional path.
func ValidatePattern(pattern string) error {
	_, err := parsePattern(pattern)
	return err
}

// MatchImage reports whether the matchImages-style pattern matches image
// (a repository such as "123.dkr.ecr.us-east-1.amazonaws.com/app", with or
// without a scheme). It follows the kubelet's rule: parse both as URLs, the
// same number of host labels with each label matched as a glob
// (path/filepath.Match), equal ports, and the pattern's path a prefix of the
// image's path. Host names are compared case-insensitively. Invalid patterns
// or images match nothing. The image is not normalised here: pass
// "docker.io/library/nginx", not "nginx".
func MatchImage(pattern, image string) bool {
	p, err := parsePattern(pattern)
	if err != nil {
		return false
	}
	img, err := parseLocation(image)
	if err != nil {
		return false
	}
	return p.matches(img)
}

// imageRef is a normalised image reference.
type imageRef struct {
	// repo is host[:port]/path without tag or digest, e.g.
	// "docker.io/library/nginx". Plugins receive it as the request's image.
	repo string
	// registry is the host[:port], e.g. "docker.io".
	registry string
	loc      location
}

// parseImage normalises an image reference the way the container runtime
// resolves it: a name without a registry host is on docker.io (and a
// single-component name there is under library/); index.docker.io is
// docker.io; the tag and digest are dropped.
func parseImage(image string) (imageRef, error) {
	if image == "" {
		return imageRef{}, errors.New("empty image reference")
	}
	if strings.ContainsAny(image, " \t\r\n") || strings.Contains(image, "://") {
		return imageRef{}, fmt.Errorf("invalid image reference %q", image)
	}
	name := image
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	host, path := dockerHubHost, name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		first := name[:i]
		if strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first {
			host, path = strings.ToLower(first), name[i+1:]
			if !strings.ContainsAny(host, ".:") && host != "localhost" {
				// Lower-cased, "Foo" would read as a Docker Hub path
				// component: keep it so that repo normalises to itself.
				host = first
			}
		}
	}
	if host == "index.docker.io" {
		host = dockerHubHost
	}
	if host == dockerHubHost && path != "" && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	if host == "" || path == "" || strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") ||
		strings.LastIndexByte(path, ':') > strings.LastIndexByte(path, '/') { // "a:b:c", "::": a colon left in the name
		return imageRef{}, fmt.Errorf("invalid image reference %q", image)
	}
	repo := host + "/" + path
	loc, err := parseLocation(repo)
	if err != nil {
		return imageRef{}, fmt.Errorf("invalid image reference %q: %v", image, err)
	}
	return imageRef{repo: repo, registry: host, loc: loc}, nil
}

// authPattern is a parsed auth key with the credential it stands for.
type authPattern struct {
	key  string
	loc  location
	cred Credential
}

// sortBySpecificity orders patterns most specific first: longer keys before
// shorter ones, ties by key; the sort is stable, so equal keys keep their
// input order.
func sortBySpecificity(ps []authPattern) {
	sort.SliceStable(ps, func(i, j int) bool {
		if len(ps[i].key) != len(ps[j].key) {
			return len(ps[i].key) > len(ps[j].key)
		}
		return ps[i].key < ps[j].key
	})
}

// matching returns the credentials of the patterns (already sorted) that
// match img, in order. ServerAddress stays empty: containerd parses it as a
// URL and drops credentials whose host differs from the one it resolves
// (a bare "host:port" does not even parse, and docker.io resolves to
// registry-1.docker.io), while the credentials were matched to this image
// already.
func matching(ps []authPattern, img imageRef) []Credential {
	var out []Credential
	for _, p := range ps {
		if p.loc.matches(img.loc) {
			c := p.cred
			c.ServerAddress = ""
			out = append(out, c)
		}
	}
	return out
}
