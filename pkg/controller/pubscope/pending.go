package pubscope

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekruise/kruise/pkg/controller/webhookscope"
)

// PendingAnnotation, on the validating configuration, holds the budgets admitted (Includer) that
// the leader's cache may not have yet, with their terms: the leader keeps them in the conditions
// until its cache has the budget, or for PendingTTL.
const PendingAnnotation = "pub.kruise.io/pending-scope"

// PendingTTL bounds how long an admitted budget the cache never shows (its create failed after
// admission, or it was deleted at once) stays in the conditions.
const PendingTTL = 2 * time.Minute

// pendingEntry is one admitted budget's terms and when it was admitted.
type pendingEntry struct {
	Terms `json:",inline"`
	Since metav1.Time `json:"since"`
}

// pendingSet is keyed by "<namespace>/<name>".
type pendingSet map[string]pendingEntry

func parsePending(annotations map[string]string) (pendingSet, error) {
	p, err := webhookscope.ParsePending[pendingEntry](annotations[PendingAnnotation])
	return pendingSet(p), err
}

func (p pendingSet) encode() (string, error) { return webhookscope.EncodePending(p) }

// settle is p without the budgets cached shows and those older than PendingTTL, and when the
// oldest kept one expires (0 with none).
func (p pendingSet) settle(cached map[string]bool, now time.Time) (pendingSet, time.Duration) {
	kept, next := webhookscope.Settle(p, now, func(name string, e pendingEntry) time.Time {
		if cached[name] {
			return time.Time{}
		}
		return e.Since.Add(PendingTTL)
	})
	return kept, next
}
