// Package imageref splits image references into the name and tag a NodeImage
// keys them by, and joins them back. The name is kept as the user wrote it
// (no "docker.io/library/" added): the runtime normalises when it pulls.
package imageref

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// pathComponent is one element of a repository path in the reference
// grammar of the container runtimes (distribution/reference).
var pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)

// DefaultTag is used when a reference names neither a tag nor a digest.
const DefaultTag = "latest"

// Split returns the repository name and the tag of image. A digest
// ("name@sha256:...") is returned as the tag "sha256:..."; a reference with
// both a tag and a digest keeps the digest (what the runtime pulls).
func Split(image string) (repo, tag string, err error) {
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil {
		return "", "", fmt.Errorf("invalid image reference %q: %w", image, err)
	}
	// go-containerregistry checks only the characters of the repository:
	// "app/", "a//b" or "-app" pass, but no runtime pulls them.
	for _, c := range strings.Split(ref.Context().RepositoryStr(), "/") {
		if !pathComponent.MatchString(c) {
			return "", "", fmt.Errorf("invalid image reference %q: bad repository path component %q", image, c)
		}
	}
	if at := strings.LastIndex(image, "@"); at >= 0 {
		repo, tag = image[:at], image[at+1:]
		if i := tagColon(repo); i >= 0 {
			repo = repo[:i]
		}
		return repo, tag, nil
	}
	if i := tagColon(image); i >= 0 {
		return image[:i], image[i+1:], nil
	}
	return image, DefaultTag, nil
}

// Join is the reference to pull for repo and tag: "repo@digest" for a
// digest, "repo:tag" otherwise.
func Join(repo, tag string) string {
	if IsDigest(tag) {
		return repo + "@" + tag
	}
	return repo + ":" + tag
}

// IsDigest reports whether tag is a digest such as "sha256:...".
func IsDigest(tag string) bool { return strings.Contains(tag, ":") }

// tagColon is the index of the colon before a tag, or -1: a colon after the
// last slash (a colon before it belongs to a registry port).
func tagColon(ref string) int {
	i := strings.LastIndex(ref, ":")
	if i < 0 || i < strings.LastIndex(ref, "/") {
		return -1
	}
	return i
}
