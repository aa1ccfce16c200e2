package credentials

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// dockerConfigEntry is one registry's entry of a docker config file.
type dockerConfigEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// dockerConfigJSON is the content of a kubernetes.io/dockerconfigjson secret.
type dockerConfigJSON struct {
	Auths map[string]dockerConfigEntry `json:"auths"`
}

// secretName names a secret for errors and Credential.Source.
func secretName(s *corev1.Secret) string {
	if s.Namespace == "" {
		return "secret " + s.Name
	}
	return "secret " + s.Namespace + "/" + s.Name
}

// secretPatterns parses the pull secrets into auth patterns, sorted most
// specific first (ties keep the order of the secrets, then of the keys).
// Unusable secrets and entries are reported as problems, which never hold
// credential material.
func secretPatterns(secrets []*corev1.Secret) ([]authPattern, []error) {
	var out []authPattern
	var problems []error
	for _, s := range secrets {
		if s == nil {
			continue
		}
		src := secretName(s)
		entries, err := secretEntries(s)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", src, err))
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(entries)) {
			p, err := entryPattern(src, key, entries[key])
			if err != nil {
				problems = append(problems, fmt.Errorf("%s: registry %q: %w", src, shownKey(key), err))
				continue
			}
			if p != nil {
				out = append(out, *p)
			}
		}
	}
	sortBySpecificity(out)
	return out, problems
}

// secretEntries decodes the docker config held by s.
func secretEntries(s *corev1.Secret) (map[string]dockerConfigEntry, error) {
	switch s.Type {
	case corev1.SecretTypeDockerConfigJson:
		data, ok := s.Data[corev1.DockerConfigJsonKey]
		if !ok {
			return nil, fmt.Errorf("has no %s key", corev1.DockerConfigJsonKey)
		}
		var cfg dockerConfigJSON
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", corev1.DockerConfigJsonKey, safeJSONError(err))
		}
		return cfg.Auths, nil
	case corev1.SecretTypeDockercfg:
		data, ok := s.Data[corev1.DockerConfigKey]
		if !ok {
			return nil, fmt.Errorf("has no %s key", corev1.DockerConfigKey)
		}
		var cfg map[string]dockerConfigEntry
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", corev1.DockerConfigKey, safeJSONError(err))
		}
		return cfg, nil
	default:
		return nil, fmt.Errorf("type %q is not a pull secret (want %s or %s)",
			s.Type, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
	}
}

// safeJSONError describes a JSON decoding error without quoting the input
// (a syntax error's message quotes the offending character).
func safeJSONError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("invalid JSON at byte offset %d", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Errorf("invalid JSON: field %q cannot hold a JSON %s", typ.Field, typ.Value)
		}
		return fmt.Errorf("invalid JSON: a JSON %s where an object was expected", typ.Value)
	default:
		return errors.New("invalid JSON")
	}
}

// entryPattern turns one docker config entry into an auth pattern, or nil
// when the entry holds no credential at all.
func entryPattern(src, key string, e dockerConfigEntry) (*authPattern, error) {
	loc, err := parseKey(key)
	if err != nil {
		if strings.Contains(key, "@") {
			// The parse error may quote part of the user information.
			return nil, errors.New("not a registry location")
		}
		return nil, fmt.Errorf("not a registry location: %w", err)
	}
	auth := cri.Auth{
		Username:      e.Username,
		Password:      e.Password,
		IdentityToken: e.IdentityToken,
		RegistryToken: e.RegistryToken,
	}
	if e.Auth != "" && auth.Username == "" && auth.Password == "" {
		user, pass, err := decodeAuth(e.Auth)
		if err != nil {
			return nil, err
		}
		auth.Username, auth.Password = user, pass
	}
	if auth == (cri.Auth{}) {
		return nil, nil
	}
	return &authPattern{key: locationKey(loc), loc: loc, cred: Credential{Auth: auth, Source: src}}, nil
}

// decodeAuth decodes a docker config "auth" value: base64 of "user:pass".
func decodeAuth(s string) (user, pass string, err error) {
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", "", errors.New(`"auth" is not valid base64`)
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", "", errors.New(`"auth" does not decode to "username:password"`)
	}
	return user, pass, nil
}

// parseKey parses a docker config key the way the kubelet's keyring does:
// a host, host:port, host/path or URL; a /v1/ or /v2/ path (the registry API
// root) stands for the whole registry; index.docker.io is docker.io.
func parseKey(key string) (location, error) {
	loc, err := parsePattern(key)
	if err != nil {
		return location{}, err
	}
	if strings.HasPrefix(loc.path, "/v1/") || strings.HasPrefix(loc.path, "/v2/") {
		loc.path = loc.path[3:]
	}
	if loc.path == "/" {
		loc.path = ""
	}
	if strings.Join(loc.labels, ".") == "index.docker.io" {
		loc.labels = []string{"docker", "io"}
	}
	return loc, nil
}

// shownKey is key as problems and logs quote it: a key holding an "@" may
// carry user information ("https://user:password@host"), so everything
// before its last "@" is replaced.
func shownKey(key string) string {
	if at := strings.LastIndex(key, "@"); at >= 0 {
		return "[redacted]" + key[at:]
	}
	return key
}

// locationKey renders loc as host[:port]/path, the order key of keyrings.
func locationKey(loc location) string {
	s := strings.Join(loc.labels, ".")
	if loc.port != "" {
		s += ":" + loc.port
	}
	return s + loc.path
}
