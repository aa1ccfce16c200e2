package recreate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// Complete reads the arguments, the namespace and the clients.
func (o *Options) Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error {
	pod, err := podName(args)
	if err != nil {
		return err
	}
	o.Pod = pod
	if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	if o.DryRun, err = cmdutil.GetDryRunStrategy(cmd); err != nil {
		return err
	}
	cmdutil.PrintFlagsWithDryRunStrategy(o.PrintFlags, o.DryRun)
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		return err
	}
	o.printObject = printer.PrintObj
	o.Kube, o.Kruise, err = cliutil.Clientsets(f)
	return err
}

// podName reads `pod/NAME`, `pod NAME` or `NAME`.
func podName(args []string) (string, error) {
	kind, name := "pod", args[0]
	if len(args) == 2 {
		kind, name = args[0], args[1]
	} else if k, n, found := strings.Cut(args[0], "/"); found {
		kind, name = k, n
	}
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
	default:
		return "", fmt.Errorf("recreate works on pods, not %q: give pod/NAME", kind)
	}
	if name == "" {
		return "", errors.New("give the pod as pod/NAME")
	}
	return name, nil
}

// Validate checks the flags that do not need the API server.
func (o *Options) Validate() error {
	if len(o.Containers) == 0 {
		return fmt.Errorf("name the containers of pod %s to recreate with -c CONTAINER", o.Pod)
	}
	for i, c := range o.Containers {
		if slices.Contains(o.Containers[:i], c) {
			return fmt.Errorf("container %q is given twice", c)
		}
	}
	if o.Wait && o.DryRun != cmdutil.DryRunNone {
		return errors.New("--wait cannot be used with --dry-run: a dry run creates nothing to wait for")
	}
	if o.ActiveDeadline >= 0 && o.ActiveDeadline < 3 {
		return fmt.Errorf("--active-deadline must be at least 3 seconds, not %d", o.ActiveDeadline)
	}
	return nil
}

// Run checks the pod, creates the request, prints it and, with --wait,
// follows it.
func (o *Options) Run(ctx context.Context) error {
	pod, err := o.Kube.CoreV1().Pods(o.Namespace).Get(ctx, o.Pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("pod %s/%s not found: check its name and the namespace (-n)", o.Namespace, o.Pod)
	}
	if err != nil {
		return fmt.Errorf("reading pod %s/%s: %w", o.Namespace, o.Pod, err)
	}
	if err := checkPod(pod, o.Containers); err != nil {
		return err
	}
	crr := o.request(pod)
	crr, err = cliutil.Create(ctx, o.DryRun, crr, o.Kruise.AppsV1beta1().ContainerRecreateRequests(o.Namespace).Create)
	if err != nil {
		return fmt.Errorf("creating containerrecreaterequest %s/%s for pod %s: %w", o.Namespace, crr.Name, o.Pod, err)
	}
	if err := o.printObject(crr, o.Out); err != nil {
		return err
	}
	if !o.Wait {
		return nil
	}
	return o.wait(ctx, crr)
}

// checkPod refuses a pod kruise would refuse, naming what to do instead.
func checkPod(pod *corev1.Pod, containers []string) error {
	if pod.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s/%s is being deleted: its containers cannot be recreated", pod.Namespace, pod.Name)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return fmt.Errorf("pod %s/%s has finished (%s): only a running pod's containers can be recreated", pod.Namespace, pod.Name, pod.Status.Phase)
	}
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range containers {
		if slices.Contains(names, c) {
			continue
		}
		for _, ic := range pod.Spec.InitContainers {
			if ic.Name == c {
				return fmt.Errorf("container %q of pod %s/%s is an init container: only spec.containers (%s) can be recreated", c, pod.Namespace, pod.Name, strings.Join(names, ", "))
			}
		}
		return fmt.Errorf("pod %s/%s has no container %q: its containers are %s", pod.Namespace, pod.Name, c, strings.Join(names, ", "))
	}
	return nil
}
