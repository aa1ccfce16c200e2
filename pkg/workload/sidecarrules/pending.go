package sidecarrules

import (
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// PendingAnnotation, on the webhook configuration, records the SidecarSets admitted (by the
// SidecarSet validating webhook, sidecarsetscope.Includer) that the leader's cache may not show yet: SidecarSet
// name → Pending. The condition keeps their terms until the leader's cache shows them, so the
// leader never narrows the condition under a SidecarSet just admitted; each injection replica
// reads it to know when its own SidecarSet cache may be behind the routing.
const PendingAnnotation = "kruise.io/sidecarset-scope-pending"

// PendingGrace bounds how long an entry is kept for a SidecarSet that never shows up (its
// create was refused by a later webhook, or it was deleted at once): its term routes pods to
// kruise that far longer, and injection replicas read SidecarSets live for them meanwhile.
const PendingGrace = 30 * time.Second

// PendingHold is how long an entry is kept at least, even once the leader's cache shows its
// SidecarSet: the other replicas' caches may see it a moment later than the leader's, and the
// entry is what tells them to read live meanwhile. A replica whose cache shows it reads nothing
// more for it, so holding it costs nothing.
const PendingHold = 5 * time.Second

// Pending is one admitted SidecarSet the routing covers ahead of the caches.
type Pending struct {
	// Generation is the SidecarSet's metadata.generation as admitted: a cache showing it at
	// this generation or later has what was admitted.
	Generation int64 `json:"generation"`
	// Term is its condition (Term).
	Term string `json:"term"`
	// Since is when it was admitted.
	Since metav1.Time `json:"since"`
}

// PendingSet is the value of PendingAnnotation.
type PendingSet map[string]Pending

// ParsePending reads PendingAnnotation from annotations; a value that does not parse is none
// (the leader writes a good one back).
func ParsePending(annotations map[string]string) (PendingSet, error) {
	out := PendingSet{}
	raw := annotations[PendingAnnotation]
	if raw == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return PendingSet{}, fmt.Errorf("annotation %s is not a map of SidecarSet name to {generation, term, since}: %w", PendingAnnotation, err)
	}
	return out, nil
}

// Encode is the annotation's value; "" for none.
func (p PendingSet) Encode() (string, error) {
	if len(p) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encoding annotation %s: %w", PendingAnnotation, err)
	}
	return string(raw), nil
}

// Shown says whether a SidecarSet cache holding cached (by name) has what entry name records.
func Shown(cached map[string]*appsv1beta1.SidecarSet, name string, p Pending) bool {
	ss, ok := cached[name]
	return ok && ss.Generation >= p.Generation
}

// Settle is what the leader keeps of p given its cache at now: the entries admitted less than
// PendingHold ago, and those its cache does not show yet admitted less than PendingGrace ago;
// and when the next entry kept expires (0: none).
func (p PendingSet) Settle(cached map[string]*appsv1beta1.SidecarSet, now time.Time) (PendingSet, time.Duration) {
	kept := PendingSet{}
	var next time.Duration
	for name, entry := range p {
		until := PendingGrace
		if Shown(cached, name, entry) {
			until = PendingHold
		}
		left := entry.Since.Add(until).Sub(now)
		if left <= 0 {
			continue
		}
		kept[name] = entry
		if next == 0 || left < next {
			next = left
		}
	}
	return kept, next
}

// Terms are the entries' terms.
func (p PendingSet) Terms() []string {
	out := make([]string, 0, len(p))
	for _, entry := range p {
		if entry.Term != "" {
			out = append(out, entry.Term)
		}
	}
	return out
}
