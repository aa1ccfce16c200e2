package podorder

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDeletionCost(t *testing.T) {
	cases := map[string]int32{
		"0": 0, "1": 1, "-1": -1, "2147483647": 2147483647, "-2147483648": -2147483648,
		// Not canonical, or not an int32: 0.
		"": 0, "+1": 0, "01": 0, "00": 0, "2147483648": 0, "1.5": 0, "ten": 0, " 1": 0,
	}
	for value, want := range cases {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.PodDeletionCost: value}}}
		assert.Equal(t, want, deletionCost(pod), "value %q", value)
	}
	assert.Equal(t, int32(0), deletionCost(&corev1.Pod{}), "no annotation")
}

func TestTrailingNumber(t *testing.T) {
	cases := map[string]int64{
		"5": 5, "sts-10": 10, "o-100": 100, "007": 7, "-3": 3, "v1.10": 10, "a1b22": 22,
		"": 0, "abc": 0, "10a": 0, "99999999999999999999": 0, "x9223372036854775807": 9223372036854775807,
	}
	for value, want := range cases {
		assert.Equal(t, want, trailingNumber(value), "value %q", value)
	}
}
