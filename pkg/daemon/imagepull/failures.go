package imagepull

import (
	"strings"

	"github.com/nodekruise/kruise/pkg/daemon/cri"
)

// Classes of a failed pull attempt, the reason label of
// kruise_daemon_image_pull_failures_total. Unlike the PullReason* words in
// NodeImage statuses they are few and fixed, fit for an alert's selector.
const (
	failureAuth     = "auth"      // 401/403, no or bad credentials, an unusable pull secret
	failureNotFound = "not_found" // no such repository, tag or manifest
	failureTimeout  = "timeout"   // the attempt's timeout or the tag's deadline passed
	failureInvalid  = "invalid"   // a malformed reference, no image for this platform, an unsupported media type
	failureOther    = "other"     // anything else, the runtime not answering included
)

var failureClasses = []string{failureAuth, failureNotFound, failureTimeout, failureInvalid, failureOther}

// invalidTexts are what containerd and CRI-O say, lower-cased, about a
// request no registry can serve: the reference does not parse, or the image
// has nothing for this node's platform or is in a format the runtime cannot
// unpack. The registry answered "not found" to none of them, so they are
// checked before the not-found texts (containerd's platform error ends in
// ": not found").
var invalidTexts = []string{
	"invalid reference format",
	"failed to parse image reference",
	"repository name must be lowercase",
	"no match for platform in manifest",
	"unsupported media type",
	"unknown media type",
}

// failureClass sorts a failed attempt by the reason and message attempt
// gave it. It returns "" for an attempt that did not fail but was
// cancelled (the tag is no longer wanted, or the daemon stops).
func failureClass(reason, message string) string {
	switch reason {
	case cri.PullReasonCancelled:
		return ""
	case cri.PullReasonUnauthorized, reasonInvalidSecret:
		return failureAuth
	case cri.PullReasonTimeout:
		return failureTimeout
	}
	if containsAny(strings.ToLower(message), invalidTexts) {
		return failureInvalid
	}
	if reason == cri.PullReasonNotFound {
		return failureNotFound
	}
	return failureOther
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
