//go:build bench

package bench

import (
	"context"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	"k8s.io/client-go/util/retry"
)

// mutatingSwitch takes one mutating webhook out of its configuration and puts it back exactly
// (same entry, same place); wait (configured or not) returns once the API server shows the
// configuration just written.
type mutatingSwitch struct {
	cfgs   admissionv1client.MutatingWebhookConfigurationInterface
	config string
	name   string
	wait   func(ctx context.Context, configured bool) error

	saved   *admissionregistrationv1.MutatingWebhook
	index   int
	removed bool
}

func (s *mutatingSwitch) remove(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := s.cfgs.Get(ctx, s.config, metav1.GetOptions{})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(c.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == s.name })
		if i < 0 {
			return fmt.Errorf("%s has no webhook %s", s.config, s.name)
		}
		s.saved, s.index = c.Webhooks[i].DeepCopy(), i
		c.Webhooks = slices.Delete(c.Webhooks, i, i+1)
		_, err = s.cfgs.Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("removing webhook %s: %w", s.name, err)
	}
	s.removed = true
	return s.wait(ctx, false)
}

func (s *mutatingSwitch) restore(ctx context.Context) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := s.cfgs.Get(ctx, s.config, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if slices.ContainsFunc(c.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == s.name }) {
			return nil
		}
		c.Webhooks = slices.Insert(c.Webhooks, min(s.index, len(c.Webhooks)), *s.saved.DeepCopy())
		_, err = s.cfgs.Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("restoring webhook %s: %w", s.name, err)
	}
	s.removed = false
	return s.wait(ctx, true)
}
