package certs

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// managedCA is the CA part of a ModeManaged Secret.
type managedCA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// trustPEM is ca-cert.pem as written: the signing CA first, then, for a
	// while after a CA rotation, the previous CA, so that a replica still
	// serving a certificate of the old CA stays trusted until it has read
	// the new Secret.
	trustPEM []byte
}

// plan is what a ModeManaged Secret needs, decided from its data and the
// time alone (never from which replica wrote it), so that every replica
// reaches the same decision about the same Secret.
type plan struct {
	// newCA: the CA is missing, unusable or due for renewal; a new CA and
	// serving certificate are issued.
	newCA bool
	// newLeaf: the serving certificate is missing, unusable, not of the
	// CA, lacks a name, or is due for renewal.
	newLeaf bool
	// copyTLS: only tls.crt/tls.key differ from cert.pem/key.pem.
	copyTLS bool
	// reason says why, for the log and the Event.
	reason string
	// ca is the usable CA when !newCA; oldCA is the previous CA when newCA
	// and it still is unexpired (it stays in ca-cert.pem).
	ca    *managedCA
	oldCA *x509.Certificate
	// served is the Secret's serving material when ok().
	served *served
}

func (p plan) ok() bool { return !p.newCA && !p.newLeaf && !p.copyTLS }

// assess reads a ModeManaged Secret's data at now.
func assess(data map[string][]byte, dnsNames []string, now time.Time) plan {
	ca, oldCA, why := readCA(data, now)
	if ca == nil {
		return plan{newCA: true, newLeaf: true, reason: why, oldCA: oldCA}
	}
	s, why := readLeaf(data, ca, dnsNames, now)
	if s == nil {
		return plan{newLeaf: true, reason: why, ca: ca}
	}
	if !bytes.Equal(data[TLSCertKey], data[ServerCertKey]) || !bytes.Equal(data[TLSKeyKey], data[ServerKeyKey]) {
		return plan{copyTLS: true, reason: fmt.Sprintf("%s/%s differ from %s/%s", TLSCertKey, TLSKeyKey, ServerCertKey, ServerKeyKey), ca: ca, served: s}
	}
	return plan{ca: ca, served: s}
}

// readCA returns the Secret's CA when it is usable and not due for renewal;
// otherwise why not, and the old CA certificate when it still is unexpired
// (to keep trusting it for the rest of its life).
func readCA(data map[string][]byte, now time.Time) (ca *managedCA, old *x509.Certificate, why string) {
	certPEM, keyPEM := data[CACertKey], data[CAKeyKey]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, nil, fmt.Sprintf("no CA yet (%s or %s is empty)", CACertKey, CAKeyKey)
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, nil, fmt.Sprintf("%s does not parse: %v", CACertKey, err)
	}
	cert := certs[0]
	if cert.IsCA && now.Before(cert.NotAfter) {
		old = cert
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, old, fmt.Sprintf("%s does not parse: %v", CAKeyKey, err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok || !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, old, fmt.Sprintf("%s is not the key of the CA in %s", CAKeyKey, CACertKey)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return nil, nil, fmt.Sprintf("the first certificate of %s (%s) is not a CA", CACertKey, cert.Subject.CommonName)
	}
	if !now.Before(cert.NotAfter) {
		return nil, nil, fmt.Sprintf("the CA %s expired at %s", cert.Subject.CommonName, cert.NotAfter.Format(time.RFC3339))
	}
	if at := renewAt(cert); !now.Before(at) {
		return nil, old, fmt.Sprintf("the CA %s is due for renewal since %s (expires %s)",
			cert.Subject.CommonName, at.Format(time.RFC3339), cert.NotAfter.Format(time.RFC3339))
	}
	return &managedCA{cert: cert, key: key, trustPEM: certPEM}, nil, ""
}

// readLeaf returns the Secret's serving material when it is usable with ca
// and not due for renewal; otherwise why not. NotBefore is not checked: a
// certificate another replica just issued with a clock a little ahead is
// adopted, not replaced.
func readLeaf(data map[string][]byte, ca *managedCA, dnsNames []string, now time.Time) (*served, string) {
	certPEM, keyPEM := data[ServerCertKey], data[ServerKeyKey]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, fmt.Sprintf("no serving certificate yet (%s or %s is empty)", ServerCertKey, ServerKeyKey)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Sprintf("%s/%s are not a usable key pair: %v", ServerCertKey, ServerKeyKey, err)
	}
	leaf := pair.Leaf
	if err := leaf.CheckSignatureFrom(ca.cert); err != nil {
		return nil, fmt.Sprintf("the serving certificate is not signed by the CA %s", ca.cert.Subject.CommonName)
	}
	if missing := missingNames(leaf, dnsNames); len(missing) > 0 {
		return nil, fmt.Sprintf("the serving certificate lacks the names %v", missing)
	}
	if !now.Before(leaf.NotAfter) {
		return nil, fmt.Sprintf("the serving certificate expired at %s", leaf.NotAfter.Format(time.RFC3339))
	}
	if at := renewAt(leaf); !now.Before(at) {
		return nil, fmt.Sprintf("the serving certificate is due for renewal since %s (expires %s)",
			at.Format(time.RFC3339), leaf.NotAfter.Format(time.RFC3339))
	}
	renew := renewAt(leaf)
	if caRenew := renewAt(ca.cert); caRenew.Before(renew) {
		renew = caRenew
	}
	s := newServed(&pair, ca.trustPEM)
	s.renewAt = renew
	return s, ""
}

// missingNames returns the names of want that c does not list in its SANs
// (exactly: a wildcard does not cover the short names kruise needs).
func missingNames(c *x509.Certificate, want []string) []string {
	var missing []string
	for _, n := range want {
		if !slices.Contains(c.DNSNames, n) {
			missing = append(missing, n)
		}
	}
	return missing
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// issue carries out p at now: it returns the Secret data to write (data's
// other keys kept) and the serving material it holds.
func issue(p plan, data map[string][]byte, dnsNames []string, caValidity, certValidity time.Duration, now time.Time) (map[string][]byte, *served, error) {
	out := make(map[string][]byte, len(data)+6)
	for k, v := range data {
		out[k] = v
	}
	if p.copyTLS && !p.newCA && !p.newLeaf {
		out[TLSCertKey], out[TLSKeyKey] = data[ServerCertKey], data[ServerKeyKey]
		return out, p.served, nil
	}
	ca := p.ca
	if p.newCA {
		c, err := newCA(now, caValidity)
		if err != nil {
			return nil, nil, err
		}
		trust := slices.Clone(c.certPEM)
		if p.oldCA != nil {
			old, err := certutil.EncodeCertificates(p.oldCA)
			if err != nil {
				return nil, nil, fmt.Errorf("encoding the previous CA: %w", err)
			}
			trust = append(trust, old...)
		}
		ca = &managedCA{cert: c.cert, key: c.key, trustPEM: trust}
		out[CACertKey], out[CAKeyKey] = trust, c.keyPEM
	}
	leaf, err := newServing(now, certValidity, ca.cert, ca.key, dnsNames)
	if err != nil {
		return nil, nil, err
	}
	out[ServerCertKey], out[TLSCertKey] = leaf.certPEM, leaf.certPEM
	out[ServerKeyKey], out[TLSKeyKey] = leaf.keyPEM, leaf.keyPEM
	s, why := readLeaf(out, ca, dnsNames, now)
	if s == nil {
		// Only a validity too short to leave the renewal window would do
		// this, and Config.validate refuses those.
		return nil, nil, fmt.Errorf("the certificate just issued is not usable: %s", why)
	}
	return out, s, nil
}
