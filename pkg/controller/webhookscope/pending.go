package webhookscope

import (
	"encoding/json"
	"fmt"
	"time"
)

// ParsePending decodes a pending annotation's value, a JSON map from the admitted object's key
// to the kind's entry E; "" is none. A value that does not parse is none too, with the error
// (the leader writes a good one back).
func ParsePending[E any](raw string) (map[string]E, error) {
	out := map[string]E{}
	if raw == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return map[string]E{}, fmt.Errorf("pending annotation: %w", err)
	}
	if out == nil {
		out = map[string]E{}
	}
	return out, nil
}

// EncodePending is the annotation's value for p; "" for none. Maps encode with sorted keys, so
// the same entries give the same text.
func EncodePending[E any](p map[string]E) (string, error) {
	if len(p) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encoding the pending annotation: %w", err)
	}
	return string(raw), nil
}

// Settle is what is kept of p at now: the entries whose expiry (until, per entry; the zero time
// drops it at once) is after now; and how long until the first kept one expires (0: none).
func Settle[E any](p map[string]E, now time.Time, until func(key string, e E) time.Time) (map[string]E, time.Duration) {
	kept := map[string]E{}
	var next time.Duration
	for key, e := range p {
		left := until(key, e).Sub(now)
		if left <= 0 {
			continue
		}
		kept[key] = e
		if next == 0 || left < next {
			next = left
		}
	}
	return kept, next
}
