package recreate

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
	"github.com/nodekruise/kruise/pkg/client/clientset/versioned"
)

// follow feeds step with the request as it is now and then with every
// change the API server reports, until step says it is done, the request
// is deleted or ctx ends. A closed or expired watch is reopened after a
// fresh read, so a long wait survives the API server's watch timeouts.
func follow(ctx context.Context, client versioned.Interface, crr *appsv1beta1.ContainerRecreateRequest, step func(*appsv1beta1.ContainerRecreateRequest) (bool, error)) error {
	requests := client.AppsV1beta1().ContainerRecreateRequests(crr.Namespace)
	current := crr
	for {
		if done, err := step(current); done || err != nil {
			return err
		}
		w, err := requests.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", crr.Name).String(),
			ResourceVersion: current.ResourceVersion,
		})
		if err != nil {
			return fmt.Errorf("watching containerrecreaterequest %s/%s: %w", crr.Namespace, crr.Name, err)
		}
		done, err := drain(ctx, w, step)
		w.Stop()
		if done || err != nil {
			return err
		}
		// The watch ended without an answer: read the request again and
		// watch from there.
		current, err = requests.Get(ctx, crr.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading containerrecreaterequest %s/%s: %w", crr.Namespace, crr.Name, err)
		}
	}
}

// drain passes each event of w to step. It returns done when step is
// done, and neither done nor an error when the watch closed or expired and
// has to be reopened.
func drain(ctx context.Context, w watch.Interface, step func(*appsv1beta1.ContainerRecreateRequest) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Error:
				if err := apierrors.FromObject(ev.Object); apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
					return false, nil
				} else {
					return false, fmt.Errorf("watch failed: %w", err)
				}
			case watch.Deleted:
				return false, fmt.Errorf("the containerrecreaterequest was deleted before it completed")
			case watch.Added, watch.Modified:
				crr, isCRR := ev.Object.(*appsv1beta1.ContainerRecreateRequest)
				if !isCRR {
					continue
				}
				if done, err := step(crr); done || err != nil {
					return done, err
				}
			}
		}
	}
}
