package rollout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

type statusOptions struct {
	watch    bool
	timeout  time.Duration
	revision int64
}

func newCmdStatus(d *deps) *cobra.Command {
	o := statusOptions{watch: true}
	cmd := &cobra.Command{
		Use:   "status (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Show the status of the rollout",
		Long: `Show the status of a workload's rollout.

By default it watches the rollout until it is done: on a terminal as a progress
bar redrawn in place (pods updated, ready and available against the target,
the partition, pods waiting on a lifecycle hook, the container batch of each
pod updated in place), and as one line per change when piped. A rollout held
by a partition is done once every pod outside the partition is updated,
ready and available. It fails when a CloneSet passes its progressDeadlineSeconds, or when
--timeout passes. Use --watch=false to print the status once.`,
		Example: `  # Follow a CloneSet's rollout until it is done
  kubectl kruise rollout status cloneset/web

  # Print the state of an Advanced StatefulSet's rollout once
  kubectl kruise rollout status asts/db --watch=false

  # Give up after five minutes
  kubectl kruise rollout status ads/agent --timeout=5m`,
		Args:              targetArgs,
		ValidArgsFunction: d.completeTargets,
		RunE: d.onTarget(func(cmd *cobra.Command, t target) error {
			return d.runStatus(cmd.Context(), t, o)
		}),
	}
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", o.watch, "Watch the rollout until it is done.")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 0, "How long to wait before giving up; 0 waits for ever (e.g. 1s, 2m, 3h).")
	cmd.Flags().Int64Var(&o.revision, "revision", 0, "Fail unless the rollout under way is to this revision (0: the latest).")
	return cmd
}

func (d *deps) runStatus(ctx context.Context, t target, o statusOptions) error {
	ctx, c, err := d.start(ctx)
	if err != nil {
		return err
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if t.kind.builtin {
		return d.builtinStatus(ctx, c, t, o)
	}
	kk, w, err := getKruise(ctx, c, t)
	if err != nil {
		return err
	}
	if err := checkRevision(ctx, c, t, w, o.revision); err != nil {
		return err
	}
	if !o.watch {
		pods, err := listPods(ctx, c, w)
		if err != nil {
			return err
		}
		s := takeSnapshot(t.kind.display, w, pods)
		if err := stalledError(t, s); err != nil {
			return err
		}
		fmt.Fprintln(d.streams.Out, s.summary())
		return nil
	}
	var v view = &lineView{out: d.streams.Out}
	if d.isTerminal(d.streams.Out) {
		v = &terminalView{out: d.streams.Out, width: terminalWidth(d.streams.Out)}
	}
	return watchRollout(ctx, c, t, kk, w, v, o)
}

// stalledError fails a rollout that passed its progress deadline.
func stalledError(t target, s snapshot) error {
	if !s.stalled || s.done() {
		return nil
	}
	return fmt.Errorf("%s %q rollout exceeded its progress deadline: %s (see kubectl kruise describe %s/%s and the pods' events)",
		t.kind.display, t.name, s.stalledMessage, kindArg(t.kind.display), t.name)
}

// checkRevision fails when the revision under way is not the one asked for.
func checkRevision(ctx context.Context, c *clients, t target, w workload, want int64) error {
	if want <= 0 {
		return nil
	}
	name := w.counts().updateRevision
	rev, err := c.kube.AppsV1().ControllerRevisions(t.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the update revision %q of %s %q: %w", name, t.kind.display, t.name, err)
	}
	if rev.Revision != want {
		return fmt.Errorf("desired revision (%d) is different from the running revision (%d) of %s %q", want, rev.Revision, t.kind.display, t.name)
	}
	return nil
}

// listPods lists the pods w's selector selects.
func listPods(ctx context.Context, c *clients, w workload) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(w.podSelector())
	if err != nil {
		return nil, fmt.Errorf("reading the pod selector of %q: %w", w.GetName(), err)
	}
	list, err := c.kube.CoreV1().Pods(w.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %q: %w", w.GetName(), err)
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	return pods, nil
}

// watchRollout follows the workload and its pods through two informers and
// shows a snapshot after every change, until the rollout is done, stalls,
// the workload goes, or ctx ends.
func watchRollout(ctx context.Context, c *clients, t target, kk kruiseKind, first workload, v view, o statusOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	changed := make(chan struct{}, 1)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke(changed) },
		UpdateFunc: func(any, any) { poke(changed) },
		DeleteFunc: func(any) { poke(changed) },
	}
	lw, example := kk.listWatch(c, t.namespace, t.name)
	objects, objectInformer := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: lw, ObjectType: example, Handler: notify})
	selector, err := metav1.LabelSelectorAsSelector(first.podSelector())
	if err != nil {
		return fmt.Errorf("reading the pod selector of %s %q: %w", t.kind.display, t.name, err)
	}
	podAPI := c.kube.CoreV1().Pods(t.namespace)
	podLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, lo metav1.ListOptions) (runtime.Object, error) {
			lo.LabelSelector = selector.String()
			return podAPI.List(ctx, lo)
		},
		WatchFuncWithContext: func(ctx context.Context, lo metav1.ListOptions) (watch.Interface, error) {
			lo.LabelSelector = selector.String()
			return podAPI.Watch(watchContext(ctx), lo)
		},
	}
	podStore, podInformer := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: podLW, ObjectType: &corev1.Pod{}, Handler: notify})
	go objectInformer.RunWithContext(ctx)
	go podInformer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), objectInformer.HasSynced, podInformer.HasSynced) {
		return timeoutError(ctx, t, o, nil)
	}
	key := t.namespace + "/" + t.name
	var last *snapshot
	for {
		item, exists, err := objects.GetByKey(key)
		if err != nil {
			return fmt.Errorf("reading %s %q from the watch cache: %w", t.kind.display, t.name, err)
		}
		if !exists {
			return fmt.Errorf("%s %q in namespace %q was deleted while its rollout was watched", t.kind.display, t.name, t.namespace)
		}
		w, err := wrapKruise(item)
		if err != nil {
			return err
		}
		var pods []*corev1.Pod
		for _, p := range podStore.List() {
			pods = append(pods, p.(*corev1.Pod))
		}
		s := takeSnapshot(t.kind.display, w, pods)
		last = &s
		v.show(s)
		if s.done() {
			return nil
		}
		if err := stalledError(t, s); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return timeoutError(ctx, t, o, last)
		case <-changed:
		}
	}
}

// timeoutError says why watching ended early.
func timeoutError(ctx context.Context, t target, o statusOptions, last *snapshot) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && o.timeout > 0 {
		state := ""
		if last != nil {
			c := last.counts
			state = fmt.Sprintf(": %d of %d updated, %d ready", c.updated, c.target(), c.updatedReady)
		}
		return fmt.Errorf("%s %q rollout did not finish within %s%s", t.kind.display, t.name, o.timeout, state)
	}
	return fmt.Errorf("watching the rollout of %s %q: %w", t.kind.display, t.name, ctx.Err())
}

// poke signals a change without blocking: one pending signal is enough.
func poke(changed chan<- struct{}) {
	select {
	case changed <- struct{}{}:
	default:
	}
}
