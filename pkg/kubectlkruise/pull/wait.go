package pull

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/kubectlkruise/cliutil"
)

// watcher is one watch that is reopened, after a fresh read, whenever the
// API server closes or expires it.
type watcher struct {
	open   func(ctx context.Context, rv string) (watch.Interface, error)
	reread func(ctx context.Context) (string, error)
	rv     string
	w      watch.Interface
}

// events is the channel of the watch, opened if need be.
func (w *watcher) events(ctx context.Context) (<-chan watch.Event, error) {
	if w.w == nil {
		var err error
		if w.w, err = w.open(ctx, w.rv); err != nil {
			return nil, err
		}
	}
	return w.w.ResultChan(), nil
}

// reopen drops the watch and reads afresh, to be watched from there.
func (w *watcher) reopen(ctx context.Context) error {
	w.stop()
	rv, err := w.reread(ctx)
	w.rv = rv
	return err
}

func (w *watcher) stop() {
	if w.w != nil {
		w.w.Stop()
		w.w = nil
	}
}

// ended reports whether an event says the watch has to be reopened; err is
// any other error the watch reported.
func ended(ev watch.Event, ok bool) (bool, error) {
	if !ok {
		return true, nil
	}
	if ev.Type != watch.Error {
		return false, nil
	}
	err := apierrors.FromObject(ev.Object)
	if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
		return true, nil
	}
	return false, fmt.Errorf("watch failed: %w", err)
}

// wait follows the job and the NodeImages of its nodes until the job has
// finished, printing each change.
func (o *Options) wait(ctx context.Context, job *appsv1beta1.ImagePullJob) error {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	p := newProgress(job)
	jobs := o.Kruise.AppsV1beta1().ImagePullJobs(job.Namespace)
	nodeImages := o.Kruise.AppsV1beta1().NodeImages()
	readNodeImages := func(ctx context.Context) (string, error) {
		list, err := nodeImages.List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", fmt.Errorf("listing NodeImages: %w", err)
		}
		for i := range list.Items {
			p.observe(&list.Items[i])
		}
		return list.ResourceVersion, nil
	}
	jobWatch := &watcher{
		rv: job.ResourceVersion,
		open: func(ctx context.Context, rv string) (watch.Interface, error) {
			return jobs.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", job.Name).String(), ResourceVersion: rv})
		},
		reread: func(ctx context.Context) (string, error) {
			current, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return "", fmt.Errorf("reading imagepulljob %s/%s: %w", job.Namespace, job.Name, err)
			}
			p.job = current
			return current.ResourceVersion, nil
		},
	}
	nodeWatch := &watcher{
		open: func(ctx context.Context, rv string) (watch.Interface, error) {
			return nodeImages.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		},
		reread: readNodeImages,
	}
	defer jobWatch.stop()
	defer nodeWatch.stop()
	err := o.follow(ctx, p, jobWatch, nodeWatch)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s waiting for imagepulljob %s/%s (%d of %d nodes done); it goes on: check it with `kubectl kruise describe imagepulljob/%s`",
			o.Timeout, job.Namespace, job.Name, p.job.Status.Succeeded+p.job.Status.Failed, p.job.Status.Desired, job.Name)
	}
	return err
}

// follow handles the events of both watches until the job is done.
func (o *Options) follow(ctx context.Context, p *progress, jobWatch, nodeWatch *watcher) error {
	if err := nodeWatch.reopen(ctx); err != nil {
		return err
	}
	for {
		p.print(o.Out)
		if p.done() {
			// One last read, so that every node's final state and reason
			// is in, whichever watch reported first.
			if _, err := nodeWatch.reread(ctx); err != nil {
				return err
			}
			p.print(o.Out)
			if err := p.outcome(); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "imagepulljob %s completed: %s pulled on %s\n", p.job.Name, p.job.Spec.Image, cliutil.Count(int(p.job.Status.Succeeded), "node"))
			return nil
		}
		jobEvents, err := jobWatch.events(ctx)
		if err != nil {
			return fmt.Errorf("watching imagepulljob %s: %w", p.job.Name, err)
		}
		nodeEvents, err := nodeWatch.events(ctx)
		if err != nil {
			return fmt.Errorf("watching NodeImages: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-jobEvents:
			if reopen, err := ended(ev, ok); err != nil {
				return err
			} else if reopen {
				if err := jobWatch.reopen(ctx); err != nil {
					return err
				}
				continue
			}
			if ev.Type == watch.Deleted {
				return fmt.Errorf("imagepulljob %s/%s was deleted before it finished", p.job.Namespace, p.job.Name)
			}
			if job, isJob := ev.Object.(*appsv1beta1.ImagePullJob); isJob {
				p.job, jobWatch.rv = job, job.ResourceVersion
			}
		case ev, ok := <-nodeEvents:
			if reopen, err := ended(ev, ok); err != nil {
				return err
			} else if reopen {
				if err := nodeWatch.reopen(ctx); err != nil {
					return err
				}
				continue
			}
			if ni, isNodeImage := ev.Object.(*appsv1beta1.NodeImage); isNodeImage {
				nodeWatch.rv = ni.ResourceVersion
				if ev.Type == watch.Deleted {
					delete(p.nodes, ni.Name)
				} else {
					p.observe(ni)
				}
			}
		}
	}
}
