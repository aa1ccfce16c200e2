// Package exec is `kubectl kruise exec`: kubectl's own exec, with
// -S/--sidecar to run in the container of a SidecarSet's hot-upgrade
// sidecar that works now. Such a sidecar runs as two containers
// (NAME-1, NAME-2), one working, one idle on the empty image; the pod's
// annotation kruise.io/sidecarset-working-hotupgrade-container says which.
package exec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubectlexec "k8s.io/kubectl/pkg/cmd/exec"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/completion"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/kruisekinds"
	"github.com/nodekruise/kruise/pkg/workload/sidecarrules"
)

const example = `  # Run 'date' in the working container of hot-upgrade sidecar envoy of pod web-abcde
  kubectl kruise exec web-abcde -S envoy -- date

  # A shell in it, with a terminal
  kubectl kruise exec web-abcde -S envoy -it -- sh

  # The same in a pod of CloneSet web
  kubectl kruise exec cloneset/web -S envoy -it -- sh

  # As kubectl exec: container app of pod web-abcde
  kubectl kruise exec web-abcde -c app -- ls /`

// NewCmdExec is `kubectl kruise exec`.
func NewCmdExec(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	kruisekinds.Install()
	o := &kubectlexec.ExecOptions{
		StreamOptions: kubectlexec.StreamOptions{IOStreams: streams},
		Executor:      &kubectlexec.DefaultRemoteExecutor{},
	}
	var sidecar string
	cmd := &cobra.Command{
		Use:                   "exec (POD | TYPE/NAME) [-c CONTAINER | -S SIDECAR] [flags] -- COMMAND [args...]",
		DisableFlagsInUseLine: true,
		Short:                 "Execute a command in a container, or in a hot-upgrade sidecar's working container",
		Long: `Execute a command in a container, as kubectl exec does, and with -S/--sidecar in the
working container of a SidecarSet's hot-upgrade sidecar: the one of its two containers
(SIDECAR-1, SIDECAR-2) the pod's annotation kruise.io/sidecarset-working-hotupgrade-container
names. -S takes the sidecar's name as the SidecarSet spells it; it overrides -c. For a
sidecar that is not hot-upgraded, -S names its container itself.

TYPE/NAME may be a CloneSet, an Advanced StatefulSet or an Advanced DaemonSet (and what
kubectl exec takes): the command runs in one of its pods, chosen as kubectl does.`,
		Example:           example,
		ValidArgsFunction: completion.PodResourceNameCompletionFunc(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, cmd, args, cmd.ArgsLenAtDash()); err != nil {
				return err
			}
			if sidecar != "" {
				podFor := o.ExecutablePodFn
				o.ExecutablePodFn = func(g genericclioptions.RESTClientGetter, obj runtime.Object, timeout time.Duration) (*corev1.Pod, error) {
					pod, err := podFor(g, obj, timeout)
					if err != nil {
						return nil, err
					}
					name, working, err := SidecarContainer(pod, sidecar)
					if err != nil {
						return nil, err
					}
					o.ContainerName = name
					if working && !o.Quiet {
						fmt.Fprintf(o.ErrOut, "Enter working container %s of SidecarSet.\n", name)
					}
					return pod, nil
				}
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmdutil.AddPodRunningTimeoutFlag(cmd, time.Minute)
	cmdutil.AddJsonFilenameFlag(cmd.Flags(), &o.FilenameOptions.Filenames, "to use to exec into the resource")
	cmdutil.AddContainerVarFlags(cmd, &o.ContainerName, o.ContainerName)
	_ = cmd.RegisterFlagCompletionFunc("container", completion.ContainerCompletionFunc(f))
	flags := cmd.Flags()
	flags.StringVarP(&sidecar, "sidecar", "S", "", "SidecarSet container name: with a hot-upgrade sidecar, its working container is chosen. Overrides -c.")
	flags.BoolVarP(&o.Stdin, "stdin", "i", o.Stdin, "Pass stdin to the container")
	flags.BoolVarP(&o.TTY, "tty", "t", o.TTY, "Stdin is a TTY")
	flags.BoolVarP(&o.Quiet, "quiet", "q", o.Quiet, "Only print output from the remote session")
	return cmd
}

// SidecarContainer is the container of pod that sidecar runs in: the
// working copy of a hot-upgrade sidecar (working true), else the container
// called sidecar.
func SidecarContainer(pod *corev1.Pod, sidecar string) (string, bool, error) {
	copies, err := sidecarrules.WorkingCopies(pod)
	if err != nil {
		return "", false, err
	}
	if name, ok := copies[sidecar]; ok {
		return name, true, nil
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == sidecar {
			return sidecar, false, nil
		}
	}
	hot := make([]string, 0, len(copies))
	for name := range copies {
		hot = append(hot, name)
	}
	slices.Sort(hot)
	if len(hot) == 0 {
		return "", false, fmt.Errorf("pod %s has no hot-upgrade sidecar and no container named %q", pod.Name, sidecar)
	}
	return "", false, fmt.Errorf("pod %s has no sidecar %q: its hot-upgrade sidecars are %s", pod.Name, sidecar, strings.Join(hot, ", "))
}
