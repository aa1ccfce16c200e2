package imagepulljob

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Why a job failed on a node is kept on the job (status.failures, and the
// first one in status.message): under completionPolicy Always the
// NodeImage tag, whose status holds the daemon's message, is withdrawn at
// completion, so the reason must be captured by the sync that completes
// the job, from the NodeImage status it reads.

// Reasons of a node's failure that the controller decides.
const (
	// ReasonNodeImageFull: the node's NodeImage had no room for the job's
	// request (see budget.go); the node counts as failed.
	ReasonNodeImageFull = "NodeImageFull"
	// reasonPullFailed is a daemon's failure whose message names no reason.
	reasonPullFailed = "PullFailed"
)

// daemonReasons are the reasons kruise-daemon writes in a failed tag's
// message ("failed to pull <image> after N attempts: <Reason>: ..."): the
// CRI classification of pkg/daemon/cri (PullReason*) and the daemon's own.
var daemonReasons = []string{
	"NotFound", "Unauthorized", "Timeout", "Unavailable", "Cancelled", "PullFailed",
	"InvalidPullSecret", "PullSecretNotFound", "DeadlineExceeded",
}

// failureReason finds the reason in a daemon's failure message: the
// earliest known reason written as "<Reason>: ".
func failureReason(msg string) string {
	if strings.HasPrefix(msg, "activeDeadlineSeconds") {
		return ReasonDeadlineExceeded
	}
	best, at := reasonPullFailed, -1
	for _, r := range daemonReasons {
		for from := 0; ; {
			i := strings.Index(msg[from:], r+": ")
			if i < 0 {
				break
			}
			i += from
			// A whole word: at the start or after a separator.
			if i == 0 || msg[i-1] == ' ' || msg[i-1] == '(' {
				if at < 0 || i < at {
					best, at = r, i
				}
				break
			}
			from = i + 1
		}
	}
	return best
}

// truncate cuts s to at most n characters, marking the cut with "...".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

// nodeFailure is the record of a node's failure, its message bounded.
func nodeFailure(node, reason, msg string) v1beta1.NodeFailure {
	return v1beta1.NodeFailure{Node: node, Reason: reason, Message: truncate(msg, v1beta1.MaxFailureMessage)}
}

// boundFailures lists the records of the failed nodes (sorted), at most
// MaxFailures of them, and how many are left out. A failed node without a
// record gets one with an empty reason.
func boundFailures(failed []string, records map[string]v1beta1.NodeFailure) ([]v1beta1.NodeFailure, int32) {
	nodes := append([]string(nil), failed...)
	sort.Strings(nodes)
	var out []v1beta1.NodeFailure
	for _, n := range nodes {
		if len(out) == v1beta1.MaxFailures {
			break
		}
		f, ok := records[n]
		if !ok {
			f = v1beta1.NodeFailure{Node: n}
		}
		out = append(out, f)
	}
	return out, int32(len(nodes) - len(out))
}

// maxNoteMessage bounds the failure message quoted in status.message.
const maxNoteMessage = 200

// failureNote is what status.message says about the failures: the first
// one, its reason unless its message states it, e.g. " (n1: failed to pull
// app:v1 after 4 attempts: NotFound: ...; 2 more nodes failed)".
func failureNote(failures []v1beta1.NodeFailure, omitted int32) string {
	if len(failures) == 0 {
		return ""
	}
	f := failures[0]
	note := f.Node
	if f.Reason != "" && !strings.Contains(f.Message, f.Reason+": ") {
		note += ": " + f.Reason
	}
	if f.Message != "" {
		note += ": " + truncate(f.Message, maxNoteMessage)
	}
	switch more := len(failures) - 1 + int(omitted); {
	case more == 1:
		note += "; 1 more node failed"
	case more > 1:
		note += fmt.Sprintf("; %d more nodes failed", more)
	}
	return " (" + note + ")"
}

// deadlineFailure is the record of a node still unfinished when the job's
// activeDeadlineSeconds passed: still waiting for its turn
// (parallelism), or pulling, with the daemon's last message if any.
func deadlineFailure(node string, seconds int64, waiting bool, last string) v1beta1.NodeFailure {
	msg := fmt.Sprintf("the job's activeDeadlineSeconds (%d) passed while the node was pulling", seconds)
	if waiting {
		msg = fmt.Sprintf("the job's activeDeadlineSeconds (%d) passed before the node's turn (parallelism)", seconds)
	}
	if last != "" {
		msg += "; last: " + last
	}
	return nodeFailure(node, ReasonDeadlineExceeded, msg)
}
