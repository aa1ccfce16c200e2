package webhookscope

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
)

// includeAttempts bounds the retries of Include when another writer changed the configuration.
const includeAttempts = 5

// AddFunc is what an object being admitted adds to the conditions: given what the configuration
// holds, the scope to write and the pending annotation's new value. ok false writes nothing
// (nothing to route).
type AddFunc func(ctx context.Context, current State) (want Scope, pending string, ok bool, err error)

// Include routes an object being admitted before it is stored: it reads the configuration live,
// writes what add says conditionally on the resourceVersion read (again on a conflict), and
// returns once the API server serves the written configuration from its cache, which its
// admission reads. A configuration that does not exist or lacks the entries is left alone.
func (t Target) Include(ctx context.Context, client kubernetes.Interface, add AddFunc) error {
	for range includeAttempts {
		obj, err := t.Get(ctx, client)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s %s: %w", t.Kind, t.Configuration, err)
		}
		current, found := t.Read(obj)
		if !found {
			return nil
		}
		want, pending, ok, err := add(ctx, current)
		if err != nil || !ok {
			return err
		}
		rv, err := t.Write(ctx, client, want, pending, current.ResourceVersion)
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return err
		}
		return t.WaitServed(ctx, client, rv)
	}
	return fmt.Errorf("%s %s kept changing while an object was added to its condition %s", t.Kind, t.Configuration, t.Condition)
}
