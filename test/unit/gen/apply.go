package gen

// apply changes obj by mods in order and returns it: the body of every
// constructor and From function. A nil modifier changes nothing (a table
// case without one).
func apply[T any, M ~func(T)](obj T, mods []M) T {
	for _, m := range mods {
		if m != nil {
			m(obj)
		}
	}
	return obj
}

// upsert replaces the element of list with e's key by e, or appends e when
// there is none: setters of lists keyed by name or type.
func upsert[E any, K comparable](list []E, e E, key func(E) K) []E {
	for i := range list {
		if key(list[i]) == key(e) {
			list[i] = e
			return list
		}
	}
	return append(list, e)
}
