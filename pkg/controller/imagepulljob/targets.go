package imagepulljob

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// Which nodes a job targets: by name, by node labels, by the nodes of its
// pods, or all of them (a NodeImage each).

// targets lists the NodeImages of the job's nodes, sorted by name.
func (c *Controller) targets(job *v1beta1.ImagePullJob) ([]*v1beta1.NodeImage, error) {
	var out []*v1beta1.NodeImage
	byName := func(names map[string]bool) error {
		for n := range names {
			ni, err := c.niLister.Get(n)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			out = append(out, ni)
		}
		return nil
	}
	switch kind := selectorKind(job); {
	case kind == selectorNames:
		if err := byName(toSet(job.Spec.Selector.Names)); err != nil {
			return nil, err
		}
	case kind == selectorLabels:
		sel, err := nodeSelector(job)
		if err != nil {
			return nil, err
		}
		if out, err = c.niLister.List(sel); err != nil {
			return nil, err
		}
	case strings.HasPrefix(kind, podSelectorPrefix):
		sel, err := podSelector(job)
		if err != nil {
			return nil, err
		}
		pods, err := c.podLister.Pods(job.Namespace).List(sel)
		if err != nil {
			return nil, err
		}
		nodes := map[string]bool{}
		for _, p := range pods {
			if p.Spec.NodeName != "" && !podTerminal(p) {
				nodes[p.Spec.NodeName] = true
			}
		}
		if err := byName(nodes); err != nil {
			return nil, err
		}
	default:
		var err error
		if out, err = c.niLister.List(labels.Everything()); err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// podTerminal: a finished pod no longer needs images on its node.
func podTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func nodeSelector(job *v1beta1.ImagePullJob) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(&job.Spec.Selector.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("invalid selector: %w", err)
	}
	return sel, nil
}

func podSelector(job *v1beta1.ImagePullJob) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(&job.Spec.PodSelector.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("invalid podSelector: %w", err)
	}
	return sel, nil
}
