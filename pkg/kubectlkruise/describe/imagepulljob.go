package describe

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// nodePull is the job's pull on one node, as the node's NodeImage has it.
type nodePull struct {
	phase, message string
}

// describeImagePullJob shows an ImagePullJob: what it pulls where, the
// counts, every failed node with its reason, and the nodes still pulling.
func describeImagePullJob(ctx context.Context, o *Options, name string) (string, error) {
	job, err := o.Kruise.AppsV1beta1().ImagePullJobs(o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("imagepulljob %s/%s not found: list them with `kubectl get imagepulljobs -n %s`", o.Namespace, name, o.Namespace)
	}
	if err != nil {
		return "", fmt.Errorf("reading imagepulljob %s/%s: %w", o.Namespace, name, err)
	}
	// The NodeImages say how each node's pull stands, and why a node
	// failed when the job's status records no reason for it (it keeps 16).
	pulls, pullsErr := o.nodePulls(ctx, job.UID)
	p := newPage(o.now())
	p.meta(job.ObjectMeta)
	p.line(0, "Image:\t%s", job.Spec.Image)
	p.line(0, "Nodes:\t%s", nodeSelection(job.Spec.ImagePullJobTemplate))
	p.line(0, "Pull Secrets:\t%s", orNone(strings.Join(job.Spec.PullSecrets, ", ")))
	parallelism := "1"
	if job.Spec.Parallelism != nil {
		parallelism = job.Spec.Parallelism.String()
	}
	p.line(0, "Parallelism:\t%s", parallelism)
	completion := string(job.Spec.CompletionPolicy.Type)
	if completion == "" {
		completion = string(appsv1beta1.Always)
	}
	p.line(0, "Completion Policy:\t%s", completion)
	st := job.Status
	if st.StartTime != nil {
		p.line(0, "Started:\t%s", timestamp(*st.StartTime))
	}
	if st.CompletionTime != nil {
		p.line(0, "Completed:\t%s", timestamp(*st.CompletionTime))
	}
	p.line(0, "Status:\t%d desired, %d pulling, %d succeeded, %d failed", st.Desired, st.Active, st.Succeeded, st.Failed)
	if st.Message != "" {
		p.line(0, "Message:\t%s", st.Message)
	}
	failedNodes(p, job, pulls)
	activeNodes(p, pulls)
	if pullsErr != nil {
		p.line(0, "Node Images:\t<cannot list: %v>", pullsErr)
	}
	o.events(ctx, p, job.Namespace, "ImagePullJob", job.Name, job.UID)
	return p.String(), nil
}

func nodeSelection(spec appsv1beta1.ImagePullJobTemplate) string {
	switch {
	case spec.Selector != nil && len(spec.Selector.Names) > 0:
		return "named: " + strings.Join(spec.Selector.Names, ", ")
	case spec.Selector != nil:
		s, err := metav1.LabelSelectorAsSelector(&spec.Selector.LabelSelector)
		if err != nil || s.Empty() {
			return "all nodes"
		}
		return "with labels " + s.String()
	case spec.PodSelector != nil:
		s, err := metav1.LabelSelectorAsSelector(&spec.PodSelector.LabelSelector)
		if err != nil {
			s = labels.Everything()
		}
		return "running pods with labels " + s.String()
	}
	return "all nodes"
}

// nodePulls reads the job's pull on every node whose NodeImage has it.
func (o *Options) nodePulls(ctx context.Context, uid types.UID) (map[string]nodePull, error) {
	list, err := o.Kruise.AppsV1beta1().NodeImages().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	pulls := map[string]nodePull{}
	for _, ni := range list.Items {
		for repo, image := range ni.Spec.Images {
			for _, tag := range image.Tags {
				if !slices.ContainsFunc(tag.OwnerReferences, func(r corev1.ObjectReference) bool { return r.Kind == "ImagePullJob" && r.UID == uid }) {
					continue
				}
				pull := nodePull{phase: string(appsv1beta1.ImagePhaseWaiting)}
				for _, s := range ni.Status.ImageStatuses[repo].Tags {
					if s.Tag == tag.Tag && s.Version == tag.Version {
						pull = nodePull{phase: string(s.Phase), message: s.Message}
					}
				}
				pulls[ni.Name] = pull
			}
		}
	}
	return pulls, nil
}

// failedNodes lists every failed node with the reason the job recorded,
// or else the node's last pull error.
func failedNodes(p *page, job *appsv1beta1.ImagePullJob, pulls map[string]nodePull) {
	if len(job.Status.FailedNodes) == 0 {
		return
	}
	reasons := map[string]string{}
	for _, f := range job.Status.Failures {
		reasons[f.Node] = f.Reason + "\t" + f.Message
	}
	p.line(0, "Failed Nodes:")
	p.line(1, "Node\tReason\tMessage")
	p.line(1, "----\t------\t-------")
	for _, n := range job.Status.FailedNodes {
		reason, ok := reasons[n]
		if !ok {
			reason = "<not recorded>\t" + orNone(pulls[n].message)
		}
		p.line(1, "%s\t%s", n, reason)
	}
	if job.Status.OmittedFailures > 0 {
		p.line(1, "(the job keeps the reasons of %d nodes; the other %d are shown from their NodeImages)", len(job.Status.Failures), job.Status.OmittedFailures)
	}
}

// activeNodes lists the nodes not done yet.
func activeNodes(p *page, pulls map[string]nodePull) {
	var names []string
	for n, pull := range pulls {
		if pull.phase == string(appsv1beta1.ImagePhaseWaiting) || pull.phase == string(appsv1beta1.ImagePhasePulling) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	slices.Sort(names)
	p.line(0, "Nodes Not Done:")
	for _, n := range names {
		p.line(1, "%s\t%s", n, pulls[n].phase)
	}
}
