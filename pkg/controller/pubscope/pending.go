package pubscope

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PendingAnnotation, on the validating configuration, holds the budgets admitted (Includer) that
// the leader's cache may not have yet, with their terms: the leader keeps them in the conditions
// until its cache has the budget, or for PendingTTL.
const PendingAnnotation = "pub.kruise.io/pending-scope"

// PendingTTL bounds how long an admitted budget the cache never shows (its create failed after
// admission, or it was deleted at once) stays in the conditions.
const PendingTTL = 2 * time.Minute

// pending is one admitted budget's terms and when it was admitted.
type pending struct {
	Terms `json:",inline"`
	Since metav1.Time `json:"since"`
}

// pendingSet is keyed by "<namespace>/<name>".
type pendingSet map[string]pending

func parsePending(annotations map[string]string) (pendingSet, error) {
	raw := annotations[PendingAnnotation]
	if raw == "" {
		return pendingSet{}, nil
	}
	var out pendingSet
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return pendingSet{}, fmt.Errorf("annotation %s: %w", PendingAnnotation, err)
	}
	if out == nil {
		out = pendingSet{}
	}
	return out, nil
}

func (p pendingSet) encode() (string, error) {
	if len(p) == 0 {
		return "", nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encoding annotation %s: %w", PendingAnnotation, err)
	}
	return string(b), nil
}

// settle is p without the budgets cached shows and those older than PendingTTL, and when the
// oldest kept one expires (0 with none).
func (p pendingSet) settle(cached map[string]bool, now time.Time) (pendingSet, time.Duration) {
	kept := pendingSet{}
	var next time.Duration
	for name, e := range p {
		left := e.Since.Add(PendingTTL).Sub(now)
		if cached[name] || left <= 0 {
			continue
		}
		kept[name] = e
		if next == 0 || left < next {
			next = left
		}
	}
	return kept, next
}

func namespaceOf(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}
