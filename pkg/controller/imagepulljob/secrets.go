package imagepulljob

import (
	"fmt"
	"strings"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/pullsecrets"
)

// Pull secrets that are not registry credentials are never copied for
// kruise-daemon (pkg/controller/pullsecrets), so a job's request leaves
// them out: the NodeImage must not point at a copy that will never exist.
// The job's status message says which were left out and why (the
// pullsecrets controller records the InvalidPullSecret Event). A change to
// a secret queues the unfinished jobs naming it (secretChanged in
// handlers.go, by the indexPullSecret index of index.go).

// maxSecretNotes is how many unusable secrets the status message names.
const maxSecretNotes = 3

// unusableSecrets lists, as "name (why)", the job's pull secrets that exist
// and are not registry credentials. A secret that does not exist is not
// listed: the copy is made when it appears, and the daemon goes without it
// meanwhile (PullSecretNotFound).
func (c *Controller) unusableSecrets(job *v1beta1.ImagePullJob) map[string]string {
	var out map[string]string
	for _, name := range job.Spec.PullSecrets {
		if name == "" {
			continue
		}
		s, err := c.secretLister.Secrets(job.Namespace).Get(name)
		if err != nil {
			continue
		}
		if problem := pullsecrets.Unusable(s); problem != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = problem
		}
	}
	return out
}

// secretsNote is the status message's note on unusable pull secrets, ""
// when there are none, e.g. "; pull secret regcred not used: its type is
// kubernetes.io/tls, not ...". At most maxSecretNotes are named.
func secretsNote(unusable map[string]string, spec []string) string {
	if len(unusable) == 0 {
		return ""
	}
	var b strings.Builder
	named := 0
	seen := map[string]bool{}
	for _, name := range spec { // spec order, each once
		problem, ok := unusable[name]
		if !ok || seen[name] {
			continue
		}
		seen[name] = true
		if named == maxSecretNotes {
			fmt.Fprintf(&b, "; %d more pull secrets not used", len(unusable)-named)
			break
		}
		fmt.Fprintf(&b, "; pull secret %s not used: %s", name, problem)
		named++
	}
	return b.String()
}
