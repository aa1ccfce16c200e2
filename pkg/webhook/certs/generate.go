package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Keys are ECDSA P-256 with SHA-256 signatures: a key is made in well under
// a millisecond (an RSA-2048 key takes tens to hundreds, which a renewal on
// every replica and the unit tests would pay), certificates and handshakes
// are small, and the only client, the API server, is a Go TLS client that
// has always supported it. A CA adopted from an OpenKruise Secret may be
// RSA: signing with it works the same (crypto.Signer).

// maxSkewAllowance bounds how far back a new certificate's NotBefore is set,
// so that an API server whose clock lags a little already accepts it.
const maxSkewAllowance = 5 * time.Minute

// backdate is how far before now a certificate valid for validity starts:
// maxSkewAllowance, but at most a tenth of the validity, so that a short
// validity (e2e) does not end up in its own renewal window when issued.
func backdate(validity time.Duration) time.Duration {
	return min(maxSkewAllowance, validity/10)
}

// renewAt is when a certificate is renewed: once two thirds of its life
// have passed. It depends on the certificate alone, so every replica
// reaches the same decision about the same Secret whatever its own
// configuration.
func renewAt(c *x509.Certificate) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotAfter.Add(-life / 3)
}

// issued is a certificate with its key, parsed and PEM-encoded.
type issued struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("drawing a serial number: %w", err)
	}
	return serial, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an ECDSA P-256 key: %w", err)
	}
	return key, nil
}

// newCA makes a self-signed CA valid from now (minus backdate) for validity.
func newCA(now time.Time, validity time.Duration) (*issued, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("kruise-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate(validity)).UTC(),
		NotAfter:              now.Add(validity).UTC(),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, tmpl, key, key)
}

// newServing makes a serving certificate for dnsNames signed by ca, valid
// from now (minus backdate) for validity but never past the CA's end.
func newServing(now time.Time, validity time.Duration, ca *x509.Certificate, caKey crypto.Signer, dnsNames []string) (*issued, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	tmpl, err := servingTemplate(now, validity, dnsNames)
	if err != nil {
		return nil, err
	}
	if ca.NotAfter.Before(tmpl.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	return sign(tmpl, ca, key, caKey)
}

// servingTemplate is a serving certificate for dnsNames (the first is the
// subject's common name) valid from now (minus backdate) for validity.
func servingTemplate(now time.Time, validity time.Duration, dnsNames []string) (*x509.Certificate, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: dnsNames[0]},
		DNSNames:              dnsNames,
		NotBefore:             now.Add(-backdate(validity)).UTC(),
		NotAfter:              now.Add(validity).UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}, nil
}

func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (*issued, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the certificate just signed: %w", err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, fmt.Errorf("encoding a private key: %w", err)
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return nil, fmt.Errorf("encoding a certificate: %w", err)
	}
	return &issued{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM}, nil
}
