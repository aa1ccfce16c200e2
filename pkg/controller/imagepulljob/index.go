package imagepulljob

import (
	"fmt"

	"k8s.io/client-go/tools/cache"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Index names (prefixed: the informers are shared with other controllers).
const (
	// indexJobSelector maps unfinished jobs to how they pick nodes:
	// selectorAll, selectorNames, selectorLabels or podSelectorPrefix+namespace.
	indexJobSelector = "imagepulljob.apps.kruise.io/selector"
	// indexOwnerUID maps NodeImages to the UIDs of the ImagePullJobs owning
	// any of their tags.
	indexOwnerUID = "imagepulljob.apps.kruise.io/owner-uid"

	selectorAll       = "all"
	selectorNames     = "names"
	selectorLabels    = "labels"
	podSelectorPrefix = "pods/"
)

// indexPullSecret maps unfinished jobs to the "namespace/name" of each
// secret in spec.pullSecrets.
const indexPullSecret = "imagepulljob.apps.kruise.io/pull-secret"

// addIndexes adds the controller's indexes to the informers of cfg.
func addIndexes(cfg Config) error {
	if err := addIndexer(cfg.Jobs.Informer(), indexJobSelector, jobSelectorIndex); err != nil {
		return err
	}
	if err := addIndexer(cfg.NodeImages.Informer(), indexOwnerUID, ownerUIDIndex); err != nil {
		return err
	}
	return addIndexer(cfg.Jobs.Informer(), indexPullSecret, pullSecretIndex)
}

// addIndexer adds an index unless one of that name is there already.
func addIndexer(inf cache.SharedIndexInformer, name string, fn cache.IndexFunc) error {
	if _, ok := inf.GetIndexer().GetIndexers()[name]; ok {
		return nil
	}
	if err := inf.AddIndexers(cache.Indexers{name: fn}); err != nil {
		return fmt.Errorf("adding index %s: %w", name, err)
	}
	return nil
}

func jobSelectorIndex(obj any) ([]string, error) {
	job, ok := obj.(*v1beta1.ImagePullJob)
	if !ok || job.Status.CompletionTime != nil {
		return nil, nil
	}
	return []string{selectorKind(job)}, nil
}

// selectorKind is how the job picks its nodes (an indexJobSelector value).
func selectorKind(job *v1beta1.ImagePullJob) string {
	s := job.Spec.Selector
	switch {
	case s != nil && len(s.Names) > 0:
		return selectorNames
	case s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0):
		return selectorLabels
	case s == nil && job.Spec.PodSelector != nil:
		return podSelectorPrefix + job.Namespace
	}
	return selectorAll
}

func ownerUIDIndex(obj any) ([]string, error) {
	ni, ok := obj.(*v1beta1.NodeImage)
	if !ok {
		return nil, nil
	}
	seen := map[string]bool{}
	var out []string
	for _, img := range ni.Spec.Images {
		for _, t := range img.Tags {
			for _, ref := range t.OwnerReferences {
				if isJobRef(ref) && !seen[string(ref.UID)] {
					seen[string(ref.UID)] = true
					out = append(out, string(ref.UID))
				}
			}
		}
	}
	return out, nil
}

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

// nodesOwnedBy lists the NodeImages with a tag owned by the job UID.
func (c *Controller) nodesOwnedBy(uid string) []string {
	objs, err := c.niIndexer.ByIndex(indexOwnerUID, uid)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		if ni, ok := o.(*v1beta1.NodeImage); ok {
			out = append(out, ni.Name)
		}
	}
	return out
}

// jobsByKind lists the unfinished jobs with a selector kind.
func (c *Controller) jobsByKind(kind string) []*v1beta1.ImagePullJob {
	objs, err := c.jobIndexer.ByIndex(indexJobSelector, kind)
	if err != nil {
		return nil
	}
	out := make([]*v1beta1.ImagePullJob, 0, len(objs))
	for _, o := range objs {
		if j, ok := o.(*v1beta1.ImagePullJob); ok {
			out = append(out, j)
		}
	}
	return out
}
