package spreadinjection

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

type operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// diff is the JSON patch from pod to injected, by member of metadata and spec: a subset's patch
// may change any of them (labels, annotations, containers, priority ...), and each changed
// member is set whole, so the patch holds no more than what changed.
func diff(pod, injected *corev1.Pod) ([]byte, error) {
	var ops []operation
	for _, part := range []struct {
		path          string
		before, after any
	}{
		{"/metadata", pod.ObjectMeta, injected.ObjectMeta},
		{"/spec", pod.Spec, injected.Spec},
	} {
		b, err := members(part.before)
		if err != nil {
			return nil, err
		}
		a, err := members(part.after)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(a)+len(b))
		for k := range a {
			keys = append(keys, k)
		}
		for k := range b {
			if _, ok := a[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			av, inAfter := a[k]
			bv, inBefore := b[k]
			switch {
			case !inAfter:
				ops = append(ops, operation{Op: "remove", Path: part.path + "/" + escape(k)})
			case !inBefore || !equality.Semantic.DeepEqual(av, bv):
				ops = append(ops, operation{Op: "add", Path: part.path + "/" + escape(k), Value: av})
			}
		}
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the WorkloadSpread patch: %w", err)
	}
	return raw, nil
}

func members(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the pod: %w", err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decoding the pod: %w", err)
	}
	return out, nil
}

// escape is a JSON pointer's escaping of one member name (RFC 6901).
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
