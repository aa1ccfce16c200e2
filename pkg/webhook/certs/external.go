package certs

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// readExternal reads a ModeExternal Secret's data (cert-manager's keys) at
// now and verifies that the serving certificate chains to ca.crt, is valid
// now and covers host. It returns every problem found, not only the first.
func readExternal(data map[string][]byte, host string, now time.Time) (*served, []string) {
	var missing []string
	for _, k := range []string{ExternalCAKey, TLSCertKey, TLSKeyKey} {
		if len(data[k]) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, []string{fmt.Sprintf("lacks the keys %s (cert-manager writes %s, %s and %s)",
			strings.Join(missing, ", "), ExternalCAKey, TLSCertKey, TLSKeyKey)}
	}
	var problems []string
	cas, err := certutil.ParseCertsPEM(data[ExternalCAKey])
	if err != nil {
		problems = append(problems, fmt.Sprintf("%s does not parse: %v", ExternalCAKey, err))
	}
	pair, err := tls.X509KeyPair(data[TLSCertKey], data[TLSKeyKey])
	if err != nil {
		return nil, append(problems, fmt.Sprintf("%s/%s are not a usable key pair: %v", TLSCertKey, TLSKeyKey, err))
	}
	s := newServed(&pair, data[ExternalCAKey])
	leaf := s.leaf
	if now.Before(leaf.NotBefore) {
		problems = append(problems, fmt.Sprintf("the serving certificate is not valid before %s", leaf.NotBefore.Format(time.RFC3339)))
	}
	if !now.Before(leaf.NotAfter) {
		problems = append(problems, fmt.Sprintf("the serving certificate expired at %s", leaf.NotAfter.Format(time.RFC3339)))
	}
	if err := leaf.VerifyHostname(host); err != nil {
		problems = append(problems, fmt.Sprintf("the serving certificate does not cover %s (it is for %s)", host, certNames(leaf)))
	}
	if len(cas) > 0 {
		if err := s.verifyWith(cas, now); err != nil {
			problems = append(problems, fmt.Sprintf("the serving certificate (issued by %q) does not chain to %s (%s): %v",
				leaf.Issuer.CommonName, ExternalCAKey, describeCerts(cas), err))
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return s, nil
}

// newServed wraps a parsed key pair (Leaf set) and the CA bundle that must
// trust it.
func newServed(pair *tls.Certificate, bundle []byte) *served {
	s := &served{cert: pair, leaf: pair.Leaf, bundle: bundle, intermediates: x509.NewCertPool()}
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			s.intermediates.AddCert(c)
		}
	}
	return s
}

// verifyWith checks that roots trust s's serving certificate for server
// authentication, as the API server checks it against a caBundle. The time
// is clamped into the certificate's validity: expiry is reported on its own.
func (s *served) verifyWith(roots []*x509.Certificate, now time.Time) error {
	pool := x509.NewCertPool()
	for _, c := range roots {
		pool.AddCert(c)
	}
	at := now
	if at.Before(s.leaf.NotBefore) {
		at = s.leaf.NotBefore
	}
	if !at.Before(s.leaf.NotAfter) {
		at = s.leaf.NotAfter.Add(-time.Second)
	}
	_, err := s.leaf.Verify(x509.VerifyOptions{
		Roots:         pool,
		Intermediates: s.intermediates,
		CurrentTime:   at,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

// bundleTrusts says why a caBundle would not let the API server trust s's
// serving certificate, or nil when it would.
func (s *served) bundleTrusts(caBundle []byte, now time.Time) error {
	if len(caBundle) == 0 {
		return errors.New("caBundle is empty")
	}
	roots, err := certutil.ParseCertsPEM(caBundle)
	if err != nil {
		return fmt.Errorf("caBundle holds no usable certificate: %w", err)
	}
	if err := s.verifyWith(roots, now); err != nil {
		return fmt.Errorf("caBundle (%s) does not trust the serving certificate, issued by %q: %w",
			describeCerts(roots), s.leaf.Issuer.CommonName, err)
	}
	return nil
}

// describeCerts names certificates for a message: subject and the start of
// the SHA-256 fingerprint, which tells two CAs of the same name apart.
func describeCerts(certs []*x509.Certificate) string {
	parts := make([]string, 0, len(certs))
	for _, c := range certs {
		sum := sha256.Sum256(c.Raw)
		parts = append(parts, fmt.Sprintf("%q sha256:%s", c.Subject.CommonName, hex.EncodeToString(sum[:8])))
	}
	return strings.Join(parts, ", ")
}

func certNames(c *x509.Certificate) string {
	if len(c.DNSNames) > 0 {
		return strings.Join(c.DNSNames, ", ")
	}
	return fmt.Sprintf("CN=%s, no DNS names", c.Subject.CommonName)
}
