package certs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// maxSecretAttempts bounds the read-decide-write rounds of one check: each
// lost race means another replica wrote a Secret, which the next round
// adopts, so two rounds are enough unless the Secret is being fought over.
const maxSecretAttempts = 5

// errSecretChurn: the Secret changed under every attempt of a check.
var errSecretChurn = errors.New("the Secret changed under every attempt")

// syncManagedSecret makes sure the Secret holds a usable CA and serving
// certificate and returns them. Replicas converge on one Secret: it is
// created only if absent (AlreadyExists: another replica was first, adopt
// its Secret), replaced only when assess finds it unusable or due for
// renewal, and then only at the resourceVersion it was read at (Conflict:
// another replica wrote first, read again and adopt its Secret). A valid
// Secret is never overwritten, whoever wrote it.
func (m *Manager) syncManagedSecret(ctx context.Context, c *check) *served {
	logger := klog.FromContext(ctx).WithValues("secret", klog.KRef(m.cfg.Namespace, m.cfg.SecretName))
	secrets := m.cfg.Client.CoreV1().Secrets(m.cfg.Namespace)
	ref := secretRef(m.cfg.Namespace, m.cfg.SecretName, "")
	for attempt := 0; attempt < maxSecretAttempts; attempt++ {
		now := m.clock.Now()
		sec, err := secrets.Get(ctx, m.cfg.SecretName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			data, s, err := issue(plan{newCA: true, newLeaf: true}, nil, m.dnsNames, m.cfg.CAValidity, m.cfg.CertValidity, now)
			if err != nil {
				m.apiError(c, ref, "issuing certificates: %v", err)
				return nil
			}
			// Type kubernetes.io/tls (tls.crt and tls.key are always
			// written), the type cert-manager writes: a Secret's type
			// cannot change, so this lets a switch to cert-manager
			// issue into the same Secret without deleting it first.
			created, err := secrets.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: m.cfg.SecretName, Namespace: m.cfg.Namespace},
				Type:       corev1.SecretTypeTLS,
				Data:       data,
			}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				logger.V(2).Info("Webhook certificate Secret was created by another replica, adopting it")
				continue
			}
			if err != nil {
				m.apiError(c, ref, "creating the Secret: %v", err)
				return nil
			}
			ref.UID = created.UID
			logger.Info("Webhook certificate Secret created", "ca", s.leaf.Issuer.CommonName, "notAfter", s.leaf.NotAfter)
			m.event(ref, ReasonCertificateIssued, "created a CA and a serving certificate for %s, valid until %s",
				strings.Join(m.dnsNames, ", "), s.leaf.NotAfter.UTC().Format("2006-01-02T15:04:05Z"))
			return m.adopted(c, ref, s)
		}
		if err != nil {
			m.apiError(c, ref, "reading the Secret: %v", err)
			return nil
		}
		ref.UID = sec.UID
		if cert := sec.Annotations[CertManagerCertificateAnnotation]; cert != "" {
			return m.leftToCertManager(c, ref, sec, cert, now)
		}
		p := assess(sec.Data, m.dnsNames, now)
		if p.ok() {
			return m.adopted(c, ref, p.served)
		}
		data, s, err := issue(p, sec.Data, m.dnsNames, m.cfg.CAValidity, m.cfg.CertValidity, now)
		if err != nil {
			m.apiError(c, ref, "issuing certificates: %v", err)
			return nil
		}
		upd := sec.DeepCopy()
		upd.Data = data
		// upd carries the resourceVersion read: the update fails with a
		// Conflict if anyone wrote the Secret since.
		if _, err := secrets.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				logger.V(2).Info("Webhook certificate Secret changed since read, reading it again", "resourceVersion", sec.ResourceVersion)
				continue
			}
			m.apiError(c, ref, "updating the Secret (%s): %v", p.reason, err)
			return nil
		}
		what := "a serving certificate"
		switch {
		case p.newCA:
			what = "a new CA and serving certificate"
		case p.copyTLS:
			what = "the copies " + TLSCertKey + "/" + TLSKeyKey
		}
		logger.Info("Webhook certificate Secret updated", "wrote", what, "reason", p.reason, "notAfter", s.leaf.NotAfter)
		m.event(ref, ReasonCertificateIssued, "wrote %s, valid until %s: %s", what,
			s.leaf.NotAfter.UTC().Format("2006-01-02T15:04:05Z"), p.reason)
		return m.adopted(c, ref, s)
	}
	m.apiError(c, ref, "%v (%d attempts)", errSecretChurn, maxSecretAttempts)
	return nil
}

// leftToCertManager serves, without writing anything, while the Secret is
// one cert-manager issues (the replicas of an install being switched to
// external certificates): kruise's own serving certificate and CA, under
// their own keys if cert-manager left them, else the one this replica
// holds, serve until the replicas with external certificates take over. If
// there is none usable, the replica is unready with the reason.
func (m *Manager) leftToCertManager(c *check, ref corev1.ObjectReference, sec *corev1.Secret, certificate string, now time.Time) *served {
	c.seen[refKey(ref)] = ref
	msg := fmt.Sprintf(ownedSecretHint, klog.KRef(sec.Namespace, certificate))
	p := assess(sec.Data, m.dnsNames, now)
	s, from := p.served, "from "+ServerCertKey+"/"+ServerKeyKey
	if s == nil {
		if cur := m.current.Load(); cur != nil && now.Before(cur.leaf.NotAfter) {
			s, from = cur, "that it holds"
		}
	}
	if s == nil {
		c.add(Problem{Object: ref, Reason: ReasonSecretIssuedByCertManager, Message: msg + "; kruise's own certificate there is unusable: " + p.reason})
		return nil
	}
	c.add(Problem{Object: ref, Reason: ReasonSecretIssuedByCertManager, Transient: true,
		Message: msg + "; until then kruise serves its own certificate " + from})
	if !s.renewAt.IsZero() {
		c.dueAt(s.renewAt)
	}
	return s
}

func (m *Manager) adopted(c *check, ref corev1.ObjectReference, s *served) *served {
	c.ok(ref)
	c.dueAt(s.renewAt)
	return s
}

// syncExternalSecret reads and verifies the Secret someone else writes.
func (m *Manager) syncExternalSecret(ctx context.Context, c *check) *served {
	ref := secretRef(m.cfg.Namespace, m.cfg.SecretName, "")
	sec, err := m.cfg.Client.CoreV1().Secrets(m.cfg.Namespace).Get(ctx, m.cfg.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		c.add(Problem{Object: ref, Reason: ReasonSecretNotFound, Message: fmt.Sprintf(
			"does not exist: with EnableExternalCerts the certificates come from a Secret written by cert-manager (or another issuer) with keys %s, %s and %s",
			ExternalCAKey, TLSCertKey, TLSKeyKey)})
		return nil
	}
	if err != nil {
		m.apiError(c, ref, "reading the Secret: %v", err)
		return nil
	}
	ref.UID = sec.UID
	s, problems := readExternal(sec.Data, m.host, c.now)
	if len(problems) > 0 {
		c.seen[refKey(ref)] = ref
		c.add(Problem{Object: ref, Reason: ReasonCertificateInvalid, Message: strings.Join(problems, "; ")})
		return nil
	}
	c.ok(ref)
	return s
}
