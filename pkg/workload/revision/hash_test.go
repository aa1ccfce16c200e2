package revision

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

func TestHash(t *testing.T) {
	// The expected values were computed apart from this code (32-bit FNV-1
	// of the data and the count's decimal digits, each digit of the sum
	// mapped onto apimachinery's "bcdfghjklmnpqrstvwxz2456789"), so a
	// change of the hash, say to FNV-1a, fails here: it would rename every
	// revision and set every pod of a workload taken over from OpenKruise
	// or a StatefulSet's history apart from its revision.
	tests := []struct {
		name           string
		data           string
		collisionCount *int32
		want           string
	}{
		{"no collision count", webTemplateData, nil, "696669bfb6"},
		{"collision count 0 is hashed too", webTemplateData, ptr.To[int32](0), "7fb89c44c4"},
		{"collision count 1", webTemplateData, ptr.To[int32](1), "7fb89c44c5"},
		{"collision count 2", webTemplateData, ptr.To[int32](2), "7fb89c44bd"},
		{"empty data", "", nil, "65bb57b6b5"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Hash([]byte(tt.data), tt.collisionCount)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, got, Hash([]byte(tt.data), tt.collisionCount), "stable across calls")
			assert.Empty(t, validation.IsValidLabelValue(got), "a valid label value")
			assert.Empty(t, validation.IsDNS1123Label(got), "a valid name part")
			if other, dup := seen[got]; dup {
				t.Errorf("%q hashes like %q", tt.name, other)
			}
			seen[got] = tt.name
		})
	}
}

func TestName(t *testing.T) {
	long := strings.Repeat("a", 300)
	tests := []struct {
		name, workload, hash, want string
	}{
		{"workload and hash", "web", "696669bfb6", "web-696669bfb6"},
		{"a long workload name is cut to keep a valid name", long, "696669bfb6", long[:223] + "-696669bfb6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Name(tt.workload, tt.hash)
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), 253)
			assert.Equal(t, tt.hash, ShortHash(got))
		})
	}
	assert.Equal(t, "abc", ShortHash("abc"), "a name without a dash is its own short hash")
}

func TestPodAt(t *testing.T) {
	pod := func(label string) *metav1.ObjectMeta {
		if label == "" {
			return &metav1.ObjectMeta{}
		}
		return &metav1.ObjectMeta{Labels: map[string]string{PodRevisionLabel: label}}
	}
	for _, tc := range []struct {
		label, name string
		want        bool
	}{
		{"web-696669bfb6", "web-696669bfb6", true},
		{"696669bfb6", "web-696669bfb6", true}, // CloneSetShortHash
		{"web-7fb89c44c4", "web-696669bfb6", false},
		{"7fb89c44c4", "web-696669bfb6", false},
		{"", "web-696669bfb6", false},
		{"web", "web-696669bfb6", false},
	} {
		if got := PodAt(pod(tc.label), tc.name); got != tc.want {
			t.Errorf("PodAt(label %q, %q) = %v, want %v", tc.label, tc.name, got, tc.want)
		}
	}
}
