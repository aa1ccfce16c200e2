// Package gen builds the API objects unit tests feed to fakes and caches:
// one file per kind, each with a constructor that takes the object's name
// and modifiers,
//
//	pod := gen.Pod("web", gen.SetPodNamespace("default"), gen.SetPodNodeName("node-a"))
//
// and, where tests vary a fixture, a From function that copies a base
// object and applies more modifiers to the copy:
//
//	other := gen.CRRFrom(base, gen.SetCRRName("other"))
//
// A constructor sets the name and nothing else; every other field a test
// relies on is set by a modifier the test names, so a fixture reads as what
// it holds. A test package keeps its scenario (a running pod with its
// containers, an admitted request) as a small function that composes these
// modifiers with its own names, UIDs and times.
//
// Modifiers are plain functions of the object (PodModifier is
// func(*corev1.Pod)) rather than methods of builder structs ending in
// build(): a test package writes a modifier of its own, inline or as a
// named function, without changing this package; table cases carry a
// []PodModifier; modifiers of different packages compose in one call; and
// there is no builder value to forget to build or to share by mistake
// between cases.
//
// To add a kind, add one file (cloneset.go for CloneSet): its Modifier type,
// the constructor and, when tests copy a base, a From function (both one
// call of apply), and a SetKindField, AddKindThing or SetKindThing modifier
// (upsert keeps list entries keyed by name or type) for each field some
// test sets. Set replaces, Add appends or merges. Add a modifier only with
// its first user.
//
// DrainEvents reads what a record.FakeRecorder holds.
//
// Production code must not import this package (TestNotLinkedByBinaries).
package gen
