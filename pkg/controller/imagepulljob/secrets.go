package imagepulljob

import (
	"bytes"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/controller/pullsecrets"
)

// Pull secrets that are not registry credentials are never copied for
// kruise-daemon (pkg/controller/pullsecrets), so a job's request leaves
// them out: the NodeImage must not point at a copy that will never exist.
// The job's status message says which were left out and why (the
// pullsecrets controller records the InvalidPullSecret Event).

// indexPullSecret maps unfinished jobs to the "namespace/name" of each
// secret in spec.pullSecrets.
const indexPullSecret = "imagepulljob.apps.kruise.io/pull-secret"

// maxSecretNotes is how many unusable secrets the status message names.
const maxSecretNotes = 3

func pullSecretIndex(obj any) ([]string, error) {
	job, ok := obj.(*v1beta1.ImagePullJob)
	if !ok || job.Status.CompletionTime != nil {
		return nil, nil
	}
	out := make([]string, 0, len(job.Spec.PullSecrets))
	for _, s := range job.Spec.PullSecrets {
		if s != "" {
			out = append(out, job.Namespace+"/"+s)
		}
	}
	return out, nil
}

// secretChanged queues the unfinished jobs naming a secret whose type or
// data changed (or that appeared or went): whether it is usable may have.
func (c *Controller) secretChanged(oldObj, newObj any) {
	if tomb, ok := newObj.(cache.DeletedFinalStateUnknown); ok {
		newObj = tomb.Obj
	}
	cur, ok := newObj.(*corev1.Secret)
	if !ok {
		return
	}
	if old, ok := oldObj.(*corev1.Secret); ok && old.Type == cur.Type &&
		maps.EqualFunc(old.Data, cur.Data, bytes.Equal) {
		return
	}
	objs, err := c.jobIndexer.ByIndex(indexPullSecret, cur.Namespace+"/"+cur.Name)
	if err != nil {
		return
	}
	for _, o := range objs {
		if j, ok := o.(*v1beta1.ImagePullJob); ok {
			c.enqueueJob(j)
		}
	}
}

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
