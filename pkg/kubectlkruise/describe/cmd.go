// Package describe is `kubectl kruise describe`: kubectl describe for
// kruise's objects, with what kubectl's generic view lacks: per-container
// states of a ContainerRecreateRequest, the failed nodes of an
// ImagePullJob and why, a workload's revisions, partition, pods per
// revision, lifecycle hooks and in-place updates, and the jobs' children:
// a BroadcastJob's pods per node, an AdvancedCronJob's jobs, an
// EphemeralJob's containers in each matched pod.
package describe

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

const example = `  # A ContainerRecreateRequest: each container's phase and why it failed
  kubectl kruise describe crr/web-0-x7k2p

  # An ImagePullJob: counts, failed nodes and their reasons
  kubectl kruise describe imagepulljob/pull-app-q4mz8

  # A CloneSet: revisions, partition, pods per revision, hooks, in-place updates
  kubectl kruise describe cloneset web
  kubectl kruise describe asts/db
  kubectl kruise describe ads/agent

  # A BroadcastJob: counts, conditions and its pods node by node, failed first
  kubectl kruise describe bcj/clean-disk

  # An AdvancedCronJob: schedule, template, and its jobs (scheduled and manual)
  kubectl kruise describe acj/nightly-report

  # An EphemeralJob: the matched pods and the state of the containers it added
  kubectl kruise describe ejob/debug-web`

// describer writes one kind's description.
type describer func(ctx context.Context, o *Options, name string) (string, error)

// describerFor is the describer of a kind, by every name a user may type
// for it (the CRDs' plural, singular and short names), nil if none.
func describerFor(kind string) describer {
	switch kind {
	case "containerrecreaterequest", "containerrecreaterequests", "crr":
		return describeCRR
	case "imagepulljob", "imagepulljobs":
		return describeImagePullJob
	case "cloneset", "clonesets", "clone":
		return describeCloneSet
	case "statefulset", "statefulsets", "asts", "sts":
		return describeStatefulSet
	case "daemonset", "daemonsets", "ads", "daemon":
		return describeDaemonSet
	case "broadcastjob", "broadcastjobs", "bcj":
		return describeBroadcastJob
	case "advancedcronjob", "advancedcronjobs", "acj":
		return describeAdvancedCronJob
	case "ephemeraljob", "ephemeraljobs", "ejob":
		return describeEphemeralJob
	}
	return nil
}

// Options are the clients and the namespace of one run.
type Options struct {
	genericiooptions.IOStreams
	Namespace string
	Kube      kubernetes.Interface
	Kruise    versioned.Interface
	// now is the time ages are counted to; replaced in tests.
	now func() time.Time
}

// NewCmdDescribe is `kubectl kruise describe`.
func NewCmdDescribe(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &Options{IOStreams: streams, now: time.Now}
	return &cobra.Command{
		Use:                   "describe KIND/NAME | KIND NAME",
		DisableFlagsInUseLine: true,
		Short:                 "Show a kruise object in detail, with what kubectl describe lacks",
		Long: `Show a kruise object in detail: kubectl describe's view plus what it cannot know.
  containerrecreaterequest (crr): each container's phase, whether it was stopped, and why it failed.
  imagepulljob: the node counts, each failed node with its reason (from the job, or from the node's
    NodeImage when the job records none), and the nodes still pulling.
  cloneset (clone), statefulset (asts), daemonset (ads): current and update revisions with their
    ControllerRevisions, the partition, the pods of each revision, pods held by a lifecycle hook,
    and each pod's in-place update.
  broadcastjob (bcj): policies, phase, counts and conditions, and the pods per node with their
    state, restarts and why they failed (failed first; at most 20 rows, the rest counted).
  advancedcronjob (acj): schedule, time zone, policies, history limits, the template, the last
    schedule time, and its jobs newest first with the run each is for ("manual" when created
    with create job --from).
  ephemeraljob (ejob): selector, limits, the containers it adds, phase, counts and conditions,
    and each matched pod with the state of the containers the job added (or "Not Added").
Recent Events of the object follow, as in kubectl describe.`,
		Example:           example,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeTargets(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := parseTarget(args)
			if err != nil {
				return err
			}
			if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
				return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
			}
			if o.Kube, o.Kruise, err = cliutil.Clientsets(f); err != nil {
				return err
			}
			return o.Run(cmd.Context(), kind, name)
		},
	}
}

// parseTarget reads KIND/NAME or KIND NAME; the kind may be qualified with
// its group (cloneset.apps.kruise.io).
func parseTarget(args []string) (string, string, error) {
	var kind, name string
	if len(args) == 2 {
		kind, name = args[0], args[1]
	} else if k, n, found := strings.Cut(args[0], "/"); found {
		kind, name = k, n
	} else {
		return "", "", fmt.Errorf("give the object as KIND/NAME, e.g. crr/%s", args[0])
	}
	kind = strings.TrimSuffix(strings.ToLower(kind), ".apps.kruise.io")
	if describerFor(kind) == nil {
		return "", "", fmt.Errorf("cannot describe %q: kubectl kruise describe knows containerrecreaterequest (crr), imagepulljob, cloneset (clone), statefulset (asts), daemonset (ads), broadcastjob (bcj), advancedcronjob (acj) and ephemeraljob (ejob); use kubectl describe for other kinds", kind)
	}
	if name == "" {
		return "", "", fmt.Errorf("give the name of the %s to describe", kind)
	}
	return kind, name, nil
}

// Run writes the description of kind/name.
func (o *Options) Run(ctx context.Context, kind, name string) error {
	text, err := describerFor(kind)(ctx, o, name)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(o.Out, text)
	return err
}
