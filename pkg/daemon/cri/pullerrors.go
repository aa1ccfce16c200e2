package cri

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Reasons DescribePullError gives. They are short CamelCase words fit for a
// condition or event reason.
const (
	// PullReasonNotFound: the registry has no such repository, tag or digest.
	PullReasonNotFound = "NotFound"
	// PullReasonUnauthorized: the registry refused the credentials, or
	// wanted some and got none.
	PullReasonUnauthorized = "Unauthorized"
	// PullReasonTimeout: the caller's deadline passed, or the runtime timed
	// out talking to the registry.
	PullReasonTimeout = "Timeout"
	// PullReasonCancelled: the pull was cancelled (the daemon stopped or
	// the pull is no longer wanted).
	PullReasonCancelled = "Cancelled"
	// PullReasonUnavailable: the container runtime itself did not answer.
	PullReasonUnavailable = "Unavailable"
	// PullReasonFailed: any other failure.
	PullReasonFailed = "PullFailed"
)

// MaxPullMessageLen bounds DescribePullError's message, in bytes.
const MaxPullMessageLen = 512

// Text of containerd (1.6, 1.7, 2.x) and CRI-O (containers/image) pull
// errors, lower-cased. Registries answer a missing private repository with
// 401 or "pull access denied", so an ambiguous message counts as
// Unauthorized: the message tells the rest.
var (
	unauthorizedTexts = []string{
		"401 unauthorized",
		"403 forbidden",
		"pull access denied",
		"authorization failed",
		"no basic auth credentials",
		"failed to authorize",
		"unauthorized:",
		"authentication required",
		"insufficient_scope",
		"denied: requested access",
		"invalid username/password",
		"incorrect username or password",
	}
	notFoundTexts = []string{
		": not found",
		"manifest unknown",
		"name unknown",
		"repository name not known",
		"404 not found",
		"no such image",
	}
	timeoutTexts = []string{
		"context deadline exceeded",
		"i/o timeout",
		"tls handshake timeout",
		"client.timeout exceeded",
		"timeout awaiting response headers",
		"because of no progress", // containerd's image pull progress timeout
	}
	cancelledTexts = []string{
		"context canceled",
	}
)

// DescribePullError turns an error from ImageService.PullImage into a
// reason (one of the PullReason* constants) and a one-line message in the
// runtime's own words: the gRPC status message when there is one, passed
// through Redact (one line; URL user info, signed URL query values, auth
// headers and tokens, secret key=value pairs and JSON secret fields
// removed) and cut to at most MaxPullMessageLen bytes. A nil error gives two
// empty strings. The message is what users and default-verbosity logs see.
func DescribePullError(err error) (reason string, message string) {
	if err == nil {
		return "", ""
	}
	msg, code := runtimeMessage(err)
	lower := strings.ToLower(msg)
	switch {
	case errors.Is(err, context.Canceled) || code == codes.Canceled:
		reason = PullReasonCancelled
	case errors.Is(err, context.DeadlineExceeded) || code == codes.DeadlineExceeded:
		reason = PullReasonTimeout
	case code == codes.Unavailable:
		reason = PullReasonUnavailable
	case containsAny(lower, unauthorizedTexts) || code == codes.Unauthenticated || code == codes.PermissionDenied:
		reason = PullReasonUnauthorized
	case code == codes.NotFound || containsAny(lower, notFoundTexts):
		reason = PullReasonNotFound
	case containsAny(lower, timeoutTexts):
		reason = PullReasonTimeout
	case containsAny(lower, cancelledTexts):
		reason = PullReasonCancelled
	default:
		reason = PullReasonFailed
	}
	message = cleanMessage(msg)
	if message == "" {
		message = cleanMessage(err.Error())
	}
	return reason, message
}

// runtimeMessage returns the message of the gRPC status err carries
// (unwrapping our own context) or, without one, err's text.
func runtimeMessage(err error) (string, codes.Code) {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		st := se.GRPCStatus()
		return st.Message(), st.Code()
	}
	return err.Error(), codes.Unknown
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// grpcPrefix is how a status error nested in plain text starts.
var grpcPrefix = regexp.MustCompile(`^rpc error: code = \w+ desc = `)

// cleanMessage is Redact's one line without a nested status prefix, cut to
// MaxPullMessageLen.
func cleanMessage(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	msg = grpcPrefix.ReplaceAllString(msg, "")
	return truncate(Redact(msg), MaxPullMessageLen)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
