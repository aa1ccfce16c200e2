// Package cliutil holds the few helpers every kubectl-kruise command group
// needs in the same form: the Kubernetes and kruise clientsets built from
// kubectl's Factory, and the "1 node" / "3 nodes" counts in messages. The
// groups were written side by side and each had its own copy; keeping one
// here keeps their error wording and output the same.
package cliutil
