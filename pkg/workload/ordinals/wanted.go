package ordinals

import (
	"iter"
	"sort"
)

// Wanted are the ordinals a set of replicas pods runs: from a start ordinal up, skipping the
// reserved ones, until there are replicas of them. They are never listed out: every method
// costs O(len(reserved)) (or, enumerating, a step per ordinal looked at), so that replicas
// 2147483647 costs what replicas 3 does. Ordinals are ints (64 bits): start, replicas and the
// reserved ordinals skipped can together exceed int32.
type Wanted struct {
	start, count int
	// skip are the reserved ranges at or above start, ascending, merged where they touch or
	// overlap, so that consecutive ranges always leave a free ordinal between them.
	skip Reserved
}

// NewWanted is the replicas ordinals from start up, skipping reserved. A negative start or
// replicas counts as 0.
func NewWanted(start, replicas int, reserved Reserved) Wanted {
	w := Wanted{start: max(start, 0), count: max(replicas, 0)}
	var rs Reserved
	for _, r := range reserved {
		if r.To >= w.start {
			rs = append(rs, Range{From: max(r.From, w.start), To: r.To})
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].From < rs[j].From })
	for _, r := range rs {
		if n := len(w.skip); n > 0 && r.From <= w.skip[n-1].To+1 {
			w.skip[n-1].To = max(w.skip[n-1].To, r.To)
			continue
		}
		w.skip = append(w.skip, r)
	}
	return w
}

// Len is how many ordinals are wanted: replicas.
func (w Wanted) Len() int { return w.count }

// At is the wanted ordinal at position i (0 ≤ i < Len()), the lowest at 0.
func (w Wanted) At(i int) int {
	o := w.start + i
	for _, r := range w.skip {
		if r.From > o {
			break
		}
		o += r.To - r.From + 1
	}
	return o
}

// Position is the position of ordinal o among the wanted ones (the lowest is 0); false when o
// is not wanted (below start, reserved, or beyond the replicas).
func (w Wanted) Position(o int) (int, bool) {
	if o < w.start {
		return 0, false
	}
	pos := o - w.start
	for _, r := range w.skip {
		if r.From > o {
			break
		}
		if o <= r.To {
			return 0, false
		}
		pos -= r.To - r.From + 1
	}
	if pos >= w.count {
		return 0, false
	}
	return pos, true
}

// Contains reports whether ordinal o is wanted.
func (w Wanted) Contains(o int) bool {
	_, ok := w.Position(o)
	return ok
}

// All yields the wanted ordinals ascending, with their positions. A caller stops it early:
// walking all of a huge set is the one thing not to do.
func (w Wanted) All() iter.Seq2[int, int] {
	return func(yield func(pos, ordinal int) bool) {
		o, next := w.start, 0
		for pos := 0; pos < w.count; pos++ {
			// Ranges are merged, so one skip lands on a free ordinal.
			if next < len(w.skip) && w.skip[next].From <= o {
				o = w.skip[next].To + 1
				next++
			}
			if !yield(pos, o) {
				return
			}
			o++
		}
	}
}

// Missing is the first k wanted ordinals, ascending, that has says have no pod. It looks at one
// ordinal per pod that has one plus the k it returns, so it is bounded by the pods that exist
// and k, not by Len.
func (w Wanted) Missing(has func(ordinal int) bool, k int) []int {
	if k <= 0 {
		return nil
	}
	out := make([]int, 0, min(k, w.count))
	for _, o := range w.All() {
		if has(o) {
			continue
		}
		out = append(out, o)
		if len(out) == k {
			break
		}
	}
	return out
}
