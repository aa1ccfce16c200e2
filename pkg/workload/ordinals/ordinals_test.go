package ordinals

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		entries []intstr.IntOrString
		want    Reserved
		err     string
	}{
		{name: "none", want: Reserved{}},
		{name: "numbers and ranges", entries: []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("3-5"), intstr.FromString("7-7")},
			want: Reserved{{1, 1}, {3, 5}, {7, 7}}},
		{name: "a number written as a string", entries: []intstr.IntOrString{intstr.FromString("4")}, want: Reserved{{4, 4}}},
		{name: "a huge range stays one range", entries: []intstr.IntOrString{intstr.FromString("0-2147483647")}, want: Reserved{{0, 2147483647}}},
		{name: "negative number", entries: []intstr.IntOrString{intstr.FromInt32(-1)}, err: `reserveOrdinals[0] "-1": an ordinal is not negative`},
		{name: "a word", entries: []intstr.IntOrString{intstr.FromInt32(0), intstr.FromString("two")},
			err: `reserveOrdinals[1] "two": neither an ordinal nor a range`},
		{name: "backwards", entries: []intstr.IntOrString{intstr.FromString("5-3")}, err: "the range ends before it starts"},
		{name: "signed end", entries: []intstr.IntOrString{intstr.FromString("3--5")}, err: `"-5" is not a non-negative number`},
		{name: "open end", entries: []intstr.IntOrString{intstr.FromString("3-")}, err: `"" is not a non-negative number`},
		{name: "spaces", entries: []intstr.IntOrString{intstr.FromString("3 - 5")}, err: `"3 " is not a non-negative number`},
		{name: "beyond 32 bits", entries: []intstr.IntOrString{intstr.FromString("0-2147483648")}, err: `"2147483648" is not a 32-bit number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.entries)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestContains(t *testing.T) {
	r := Reserved{{1, 1}, {3, 5}}
	for o, want := range map[int]bool{0: false, 1: true, 2: false, 3: true, 4: true, 5: true, 6: false} {
		assert.Equal(t, want, r.Contains(o), "ordinal %d", o)
	}
}
