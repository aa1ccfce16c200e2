// Package ordinals reads an Advanced StatefulSet's reserveOrdinals: ordinals
// no pod is created at, given as numbers or inclusive ranges "a-b". The
// ranges are kept as ranges, never expanded: "0-2000000000" is one entry,
// not two billion (OpenKruise expands them into a set). The validating
// webhook and the controller read them with this one reader, so that what
// one admits the other runs.
package ordinals

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Range is the ordinals From to To, both included.
type Range struct {
	From, To int
}

// Reserved is a list of reserved ordinals.
type Reserved []Range

// Parse reads reserveOrdinals. The error names the first entry that is
// not one (see ParseEntry), by its index.
func Parse(entries []intstr.IntOrString) (Reserved, error) {
	out := make(Reserved, 0, len(entries))
	for i, e := range entries {
		r, err := ParseEntry(e)
		if err != nil {
			return nil, fmt.Errorf("reserveOrdinals[%d] %q: %w", i, e.String(), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ParseEntry reads one entry of reserveOrdinals: a non-negative 32-bit
// number (as a number, or written as a string: OpenKruise refuses the
// string, whose meaning is as clear), or a range "a-b" of two such numbers
// with a ≤ b.
func ParseEntry(e intstr.IntOrString) (Range, error) {
	if e.Type == intstr.Int {
		if e.IntVal < 0 {
			return Range{}, fmt.Errorf("an ordinal is not negative")
		}
		return Range{From: int(e.IntVal), To: int(e.IntVal)}, nil
	}
	from, to, isRange := strings.Cut(e.StrVal, "-")
	a, err := ordinal(from)
	if err != nil {
		if !isRange {
			return Range{}, fmt.Errorf(`neither an ordinal nor a range: write a number, or two joined by "-" such as "3-5"`)
		}
		return Range{}, err
	}
	if !isRange {
		return Range{From: a, To: a}, nil
	}
	b, err := ordinal(to)
	if err != nil {
		return Range{}, err
	}
	if a > b {
		return Range{}, fmt.Errorf("the range ends before it starts")
	}
	return Range{From: a, To: b}, nil
}

// ordinal reads a non-negative 32-bit number written in digits only (no
// sign, no spaces).
func ordinal(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a non-negative number", s)
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 32-bit number", s)
	}
	return int(n), nil
}

// Contains reports whether ordinal o is reserved.
func (r Reserved) Contains(o int) bool {
	for _, x := range r {
		if o >= x.From && o <= x.To {
			return true
		}
	}
	return false
}
