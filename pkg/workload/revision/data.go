package revision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// patchDirective and patchReplace mark the recorded value as a whole: applied
// as a strategic merge patch it replaces the live value instead of merging
// into it, so a revision restores exactly what it recorded.
const (
	patchDirective = "$patch"
	patchReplace   = "replace"
)

// PatchData returns a revision's Data: value (a pod template, or any part of
// a workload) nested under path and marked to replace what it finds there.
// For CloneSet, Advanced StatefulSet and Advanced DaemonSet the path is
// "spec", "template", which gives OpenKruise's
// {"spec":{"template":{...,"$patch":"replace"}}}.
//
// The bytes are stable: encoding/json sorts map keys, and numbers keep their
// text.
func PatchData(value any, path ...string) ([]byte, error) {
	if len(path) == 0 {
		return nil, errors.New("revision data: empty path")
	}
	leaf, err := toGeneric(value)
	if err != nil {
		return nil, fmt.Errorf("revision data at %v: %w", path, err)
	}
	if object, ok := leaf.(map[string]any); ok {
		object[patchDirective] = patchReplace
	}
	for i := len(path) - 1; i >= 0; i-- {
		leaf = map[string]any{path[i]: leaf}
	}
	data, err := json.Marshal(leaf)
	if err != nil {
		return nil, fmt.Errorf("revision data at %v: %w", path, err)
	}
	return data, nil
}

// DecodeData reads the value PatchData recorded under path back into into
// (a *corev1.PodTemplateSpec for the pod-template workloads).
func DecodeData(data []byte, into any, path ...string) error {
	value, err := decodeGeneric(data)
	if err != nil {
		return fmt.Errorf("decoding revision data: %w", err)
	}
	for _, key := range path {
		object, ok := value.(map[string]any)
		if !ok {
			return fmt.Errorf("revision data has no object at %q of %v", key, path)
		}
		if value, ok = object[key]; !ok {
			return fmt.Errorf("revision data has no %q of %v", key, path)
		}
	}
	if object, ok := value.(map[string]any); ok {
		delete(object, patchDirective)
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("decoding revision data at %v: %w", path, err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("decoding revision data at %v: %w", path, err)
	}
	return nil
}

// EqualData reports whether two revisions' Data record the same thing.
// Equal bytes are equal; otherwise both are compared as JSON with null
// values and empty objects left out. This is what lets a revision written by
// OpenKruise (built on an older k8s.io/api, whose templates carry
// "metadata":{"creationTimestamp":null}) equal ours for the same template,
// so taking over a workload neither creates a revision nor rolls its pods.
func EqualData(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	va, errA := decodeGeneric(a)
	vb, errB := decodeGeneric(b)
	if errA != nil || errB != nil {
		return false
	}
	return reflect.DeepEqual(prune(va), prune(vb))
}

// toGeneric turns value into maps, slices and json.Numbers through its JSON
// form, so its field names and omissions are the API's.
func toGeneric(value any) (any, error) {
	raw, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	return decodeGeneric(raw)
}

// decodeGeneric keeps numbers as json.Number: a float64 would round int64
// values above 2^53 and change the bytes, and with them the hash.
func decodeGeneric(raw []byte) (any, error) {
	decoder := json.NewDecoder(bytes.NewReader(raw))
	decoder.UseNumber()
	var value any
	if err := decoder.Decode(&value); err != nil {
		return nil, err
	}
	return value, nil
}

// prune drops null values and the objects left empty, in place; it returns
// nil for a value that is itself dropped.
func prune(value any) any {
	switch v := value.(type) {
	case map[string]any:
		for key, item := range v {
			if pruned := prune(item); pruned == nil {
				delete(v, key)
			} else {
				v[key] = pruned
			}
		}
		if len(v) == 0 {
			return nil
		}
		return v
	case []any:
		for i := range v {
			v[i] = prune(v[i])
		}
		return v
	default:
		return v
	}
}
