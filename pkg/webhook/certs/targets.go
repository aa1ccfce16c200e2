package certs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// webhookEntry is one webhook of a configuration: its name and caBundle.
type webhookEntry struct {
	name     string
	caBundle []byte
}

// configAccess reads and patches one kind of webhook configuration.
type configAccess struct {
	ref   func(name string, uid types.UID) corev1.ObjectReference
	get   func(ctx context.Context, name string) (metav1.ObjectMeta, []webhookEntry, error)
	patch func(ctx context.Context, name string, strategicMerge []byte) error
}

func (m *Manager) mutatingAccess() configAccess {
	client := m.cfg.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	return configAccess{
		ref: mutatingRef,
		get: func(ctx context.Context, name string) (metav1.ObjectMeta, []webhookEntry, error) {
			obj, err := client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return metav1.ObjectMeta{}, nil, err
			}
			entries := make([]webhookEntry, 0, len(obj.Webhooks))
			for _, w := range obj.Webhooks {
				entries = append(entries, webhookEntry{name: w.Name, caBundle: w.ClientConfig.CABundle})
			}
			return obj.ObjectMeta, entries, nil
		},
		patch: func(ctx context.Context, name string, data []byte) error {
			_, err := client.Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
			return err
		},
	}
}

func (m *Manager) validatingAccess() configAccess {
	client := m.cfg.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	return configAccess{
		ref: validatingRef,
		get: func(ctx context.Context, name string) (metav1.ObjectMeta, []webhookEntry, error) {
			obj, err := client.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return metav1.ObjectMeta{}, nil, err
			}
			entries := make([]webhookEntry, 0, len(obj.Webhooks))
			for _, w := range obj.Webhooks {
				entries = append(entries, webhookEntry{name: w.Name, caBundle: w.ClientConfig.CABundle})
			}
			return obj.ObjectMeta, entries, nil
		},
		patch: func(ctx context.Context, name string, data []byte) error {
			_, err := client.Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
			return err
		},
	}
}

// webhookBundlePatch is the strategic merge patch both kinds of
// configuration take: their webhooks list merges by name, so only the named
// entries' caBundle changes, whatever else is in the object.
type webhookBundlePatch struct {
	Webhooks []webhookBundlePatchEntry `json:"webhooks"`
}

type webhookBundlePatchEntry struct {
	Name         string `json:"name"`
	ClientConfig struct {
		CABundle []byte `json:"caBundle"`
	} `json:"clientConfig"`
}

// syncTargets checks (ModeManaged: and writes) the caBundle of every
// configured object against s.
func (m *Manager) syncTargets(ctx context.Context, s *served, c *check) {
	m.syncConfig(ctx, m.mutatingAccess(), m.cfg.MutatingWebhookConfiguration, s, c)
	m.syncConfig(ctx, m.validatingAccess(), m.cfg.ValidatingWebhookConfiguration, s, c)
	for _, name := range m.cfg.CRDs {
		m.syncCRD(ctx, name, s, c)
	}
}

// bundleProblem says why caBundle is not right for s, nil when it is. In
// ModeManaged it must be exactly the Secret's ca-cert.pem (what the Manager
// writes); in ModeExternal it must trust the serving certificate (cainjector
// writes ca.crt, an operator may add more CAs).
func (m *Manager) bundleProblem(caBundle []byte, s *served, now time.Time) error {
	if m.cfg.Mode == ModeExternal {
		return s.bundleTrusts(caBundle, now)
	}
	if bytes.Equal(caBundle, s.bundle) {
		return nil
	}
	if len(caBundle) == 0 {
		return errors.New("caBundle is empty")
	}
	return fmt.Errorf("caBundle differs from %s of Secret %s/%s", CACertKey, m.cfg.Namespace, m.cfg.SecretName)
}

func (m *Manager) syncConfig(ctx context.Context, acc configAccess, name string, s *served, c *check) {
	meta, entries, err := acc.get(ctx, name)
	ref := acc.ref(name, meta.UID)
	if apierrors.IsNotFound(err) {
		c.add(Problem{Object: ref, Reason: ReasonObjectNotFound, Message: "does not exist; the API server cannot call its webhooks until it is created with its caBundle"})
		return
	}
	if err != nil {
		m.apiError(c, ref, "reading: %v", err)
		return
	}
	c.seen[refKey(ref)] = ref
	injected := ""
	if m.cfg.Mode == ModeManaged {
		injected = injectedBy(meta.Annotations, nil)
	}
	var wrong []string
	var why []string
	allEmpty := true
	for _, e := range entries {
		problem := m.bundleProblem(e.caBundle, s, c.now)
		if injected != "" {
			problem = s.bundleTrusts(e.caBundle, c.now)
		}
		if err := problem; err != nil {
			wrong = append(wrong, e.name)
			why = append(why, fmt.Sprintf("webhook %q: %v", e.name, err))
			allEmpty = allEmpty && len(e.caBundle) == 0
		}
	}
	if len(wrong) == 0 {
		c.ok(ref)
		return
	}
	if m.cfg.Mode == ModeExternal {
		c.add(Problem{Object: ref, Reason: ReasonCABundleMismatch, Message: strings.Join(why, "; ") + externalHint})
		return
	}
	if injected != "" {
		c.add(Problem{Object: ref, Reason: ReasonCABundleLeftToCAInjector, Message: strings.Join(why, "; ") + fmt.Sprintf(injectedHint, injected)})
		return
	}
	p := webhookBundlePatch{}
	for _, n := range wrong {
		e := webhookBundlePatchEntry{Name: n}
		e.ClientConfig.CABundle = s.bundle
		p.Webhooks = append(p.Webhooks, e)
	}
	data, err := json.Marshal(p)
	if err != nil {
		m.apiError(c, ref, "encoding the caBundle patch: %v", err)
		return
	}
	what := fmt.Sprintf("webhooks %s", strings.Join(wrong, ", "))
	m.restore(ctx, c, ref, s.bundle, "caBundle of "+what, m.secretCA(), func() {
		if allEmpty {
			m.event(ref, ReasonCABundleInjected, "wrote %s into %s", m.secretCA(), what)
		} else {
			m.event(ref, ReasonCABundleInjected, "replaced the caBundle of %s with %s", what, m.secretCA())
		}
	}, func() error { return acc.patch(ctx, name, data) })
}

// secretCA names the CA kruise writes, for Events.
func (m *Manager) secretCA() string {
	return fmt.Sprintf("the CA of Secret %s/%s", m.cfg.Namespace, m.cfg.SecretName)
}

// externalHint ends a ModeExternal mismatch message.
const externalHint = " (with EnableExternalCerts kruise writes no caBundle: cert-manager's cainjector does, for objects annotated " +
	"cert-manager.io/inject-ca-from: <namespace>/<Certificate>; check the annotation and cainjector's logs)"

// restore writes desired into ref (ModeManaged): patch does it, subject
// names what it writes ("caBundle of webhooks x", "spec.conversion"),
// restored what it writes back after someone else changed it, and written
// records the Normal Event of a write that restores nothing. If this process
// wrote the same desired state there before, someone else changed it since:
// it is restored at once the first time and then with a growing delay, so
// that a fight with another writer (a GitOps tool that owns the field, an
// old controller) does not become a write storm; each is a Warning Event.
func (m *Manager) restore(ctx context.Context, c *check, ref corev1.ObjectReference, desired []byte, subject, restored string,
	written func(), patch func() error) {
	key := refKey(ref)
	overwritten := m.patches.overwritten(key, desired)
	if at := m.patches.nextAllowed(key); overwritten && c.now.Before(at) {
		c.add(Problem{Object: ref, Reason: ReasonCABundleMismatch, Message: fmt.Sprintf(
			"%s was changed again by someone else after kruise restored it; next restore at %s",
			subject, at.UTC().Format(time.RFC3339))})
		c.dueAt(at)
		return
	}
	if err := patch(); err != nil {
		m.apiError(c, ref, "writing the %s: %v", subject, err)
		return
	}
	m.patches.record(key, desired, c.now)
	klog.FromContext(ctx).Info("Webhook CA bundle written", "kind", ref.Kind, "object", klog.KRef(ref.Namespace, ref.Name), "into", subject, "overwritten", overwritten)
	if overwritten {
		m.recorder.Eventf(&ref, corev1.EventTypeWarning, ReasonCABundleOverwritten,
			"%s was changed by someone else; restored %s", subject, restored)
	} else {
		written()
	}
	c.ok(ref)
}

// Restore delays after an overwrite: the first restore is immediate, then
// each waits twice as long as the one before, up to maxRestoreDelay; after
// restoreResetAfter without a restore the delay starts over.
const (
	initialRestoreDelay = time.Second
	maxRestoreDelay     = 5 * time.Minute
	restoreResetAfter   = 10 * time.Minute
)

// patchHistory remembers, per object, the bundle this process last wrote,
// when, and how long to wait before restoring it again.
type patchHistory map[string]patchRecord

type patchRecord struct {
	bundle []byte
	at     time.Time
	delay  time.Duration
}

// overwritten: this process wrote bundle into the object before, so a
// differing caBundle now is someone else's change.
func (h patchHistory) overwritten(key string, bundle []byte) bool {
	rec, ok := h[key]
	return ok && bytes.Equal(rec.bundle, bundle)
}

func (h patchHistory) nextAllowed(key string) time.Time {
	rec := h[key]
	return rec.at.Add(rec.delay)
}

func (h patchHistory) record(key string, bundle []byte, now time.Time) {
	var delay time.Duration
	if rec, ok := h[key]; ok && bytes.Equal(rec.bundle, bundle) && now.Sub(rec.at) < restoreResetAfter {
		delay = max(initialRestoreDelay, min(2*rec.delay, maxRestoreDelay))
	}
	h[key] = patchRecord{bundle: bundle, at: now, delay: delay}
}
