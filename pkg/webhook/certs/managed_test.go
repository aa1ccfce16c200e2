package certs

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"maps"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

func TestAssessDecidesFromTheSecretAndTheTimeAlone(t *testing.T) {
	names := DNSNames(ServiceName, testNS)
	fresh, s := issueFresh(t, t0, DefaultCAValidity, DefaultCertValidity)
	leafRenew := s.renewAt
	caRenew := renewAt(parseCerts(t, fresh[CACertKey])[0])

	otherCA, _ := issueFresh(t, t0, DefaultCAValidity, DefaultCertValidity)
	with := func(kv ...any) map[string][]byte {
		d := maps.Clone(fresh)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(d, kv[i].(string))
				continue
			}
			d[kv[i].(string)] = kv[i+1].([]byte)
		}
		return d
	}
	narrow, err := newServing(t0, DefaultCertValidity, parseCerts(t, fresh[CACertKey])[0], mustKey(t, fresh[CAKeyKey]), names[2:3])
	require.NoError(t, err)

	tests := []struct {
		name string
		data map[string][]byte
		at   time.Time
		want string // "ok", "leaf", "ca", "copy"
		why  string
	}{
		{name: "fresh", data: fresh, at: t0, want: "ok"},
		{name: "clock behind the issuer: NotBefore ahead is adopted", data: fresh, at: t0.Add(-time.Hour), want: "ok"},
		{name: "just before the renewal point", data: fresh, at: leafRenew.Add(-time.Second), want: "ok"},
		{name: "at the renewal point", data: fresh, at: leafRenew, want: "leaf", why: "due for renewal"},
		{name: "expired", data: fresh, at: t0.Add(DefaultCertValidity), want: "leaf", why: "expired"},
		{name: "CA at its renewal point", data: fresh, at: caRenew, want: "ca", why: "the CA kruise-webhook-ca@"},
		{name: "empty (a Secret the chart created)", data: map[string][]byte{}, at: t0, want: "ca", why: "no CA yet"},
		{name: "CA key of another CA", data: with(CAKeyKey, otherCA[CAKeyKey]), at: t0, want: "ca", why: "is not the key of the CA"},
		{name: "CA garbage", data: with(CACertKey, []byte("junk")), at: t0, want: "ca", why: "ca-cert.pem does not parse"},
		{name: "serving certificate of another CA", data: with(ServerCertKey, otherCA[ServerCertKey], ServerKeyKey, otherCA[ServerKeyKey]), at: t0,
			want: "leaf", why: "not signed by the CA"},
		{name: "serving key of another certificate", data: with(ServerKeyKey, otherCA[ServerKeyKey]), at: t0, want: "leaf", why: "not a usable key pair"},
		{name: "serving certificate lacks names", data: with(ServerCertKey, narrow.certPEM, ServerKeyKey, narrow.keyPEM), at: t0,
			want: "leaf", why: "lacks the names [kruise-webhook-service kruise-webhook-service.kruise-system kruise-webhook-service.kruise-system.svc.cluster.local]"},
		{name: "no serving certificate", data: with(ServerCertKey, nil), at: t0, want: "leaf", why: "no serving certificate yet"},
		{name: "tls.crt missing", data: with(TLSCertKey, nil, TLSKeyKey, nil), at: t0, want: "copy", why: "tls.crt/tls.key differ"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := assess(tc.data, names, tc.at)
			got := "ok"
			switch {
			case p.newCA:
				got = "ca"
				assert.True(t, p.newLeaf, "a new CA needs a new serving certificate")
			case p.newLeaf:
				got = "leaf"
				require.NotNil(t, p.ca, "the CA is kept")
			case p.copyTLS:
				got = "copy"
			}
			assert.Equal(t, tc.want, got, p.reason)
			assert.Contains(t, p.reason, tc.why)
			if tc.want == "ok" {
				require.NotNil(t, p.served)
				assert.Equal(t, fresh[CACertKey], p.served.bundle)
			}
		})
	}
}

func mustKey(t *testing.T, pemKey []byte) crypto.Signer {
	t.Helper()
	k, err := keyutil.ParsePrivateKeyPEM(pemKey)
	require.NoError(t, err)
	return k.(crypto.Signer)
}

func TestRenewingTheServingCertificateKeepsTheCAAndOtherKeys(t *testing.T) {
	names := DNSNames(ServiceName, testNS)
	data, s := issueFresh(t, t0, DefaultCAValidity, DefaultCertValidity)
	data["operator-note"] = []byte("kept")
	at := s.renewAt
	p := assess(data, names, at)
	require.True(t, p.newLeaf)
	out, s2, err := issue(p, data, names, DefaultCAValidity, DefaultCertValidity, at)
	require.NoError(t, err)
	assert.Equal(t, data[CACertKey], out[CACertKey])
	assert.Equal(t, data[CAKeyKey], out[CAKeyKey])
	assert.NotEqual(t, data[ServerCertKey], out[ServerCertKey])
	assert.Equal(t, []byte("kept"), out["operator-note"])
	assert.Equal(t, at.Add(DefaultCertValidity), s2.leaf.NotAfter)
	assert.True(t, assess(out, names, at).ok())
}

func TestRotatingTheCAKeepsTrustingTheOldOneUntilItExpires(t *testing.T) {
	names := DNSNames(ServiceName, testNS)
	data, s := issueFresh(t, t0, 3*time.Hour, time.Hour)
	oldCA := parseCerts(t, data[CACertKey])[0]
	oldLeaf := s.leaf
	at := renewAt(oldCA)
	p := assess(data, names, at)
	require.True(t, p.newCA, p.reason)
	out, s2, err := issue(p, data, names, 3*time.Hour, time.Hour, at)
	require.NoError(t, err)

	trust := parseCerts(t, out[CACertKey])
	require.Len(t, trust, 2, "new CA, then the old one")
	assert.NotEqual(t, oldCA.Raw, trust[0].Raw)
	assert.Equal(t, oldCA.Raw, trust[1].Raw)
	assert.Equal(t, out[CACertKey], s2.bundle)
	// A replica still serving the old certificate stays trusted by the new
	// bundle, and the new certificate is trusted too.
	assert.NoError(t, (&served{leaf: oldLeaf, intermediates: x509.NewCertPool()}).bundleTrusts(out[CACertKey], at))
	assert.NoError(t, s2.bundleTrusts(out[CACertKey], at))
	assert.True(t, assess(out, names, at).ok(), "the two-CA bundle is a valid Secret")

	// The next rotation drops the CA before: only the one just replaced stays.
	newCA := trust[0]
	at2 := renewAt(newCA)
	p2 := assess(out, names, at2)
	require.True(t, p2.newCA)
	out2, _, err := issue(p2, out, names, 3*time.Hour, time.Hour, at2)
	require.NoError(t, err)
	trust2 := parseCerts(t, out2[CACertKey])
	require.Len(t, trust2, 2)
	assert.Equal(t, newCA.Raw, trust2[1].Raw)

	// An expired CA is not carried over.
	p3 := assess(data, names, oldCA.NotAfter)
	require.True(t, p3.newCA)
	assert.Nil(t, p3.oldCA)
}

// An OpenKruise install leaves an RSA CA in the Secret under the same keys:
// it is adopted, and new serving certificates are signed with it.
func TestAnRSACAFromOpenKruiseIsAdopted(t *testing.T) {
	names := DNSNames(ServiceName, testNS)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook-cert-ca"},
		NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(10 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	caPEM, err := certutil.EncodeCertificates(ca)
	require.NoError(t, err)
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	require.NoError(t, err)

	data := map[string][]byte{CACertKey: caPEM, CAKeyKey: keyPEM}
	p := assess(data, names, t0)
	require.True(t, p.newLeaf)
	require.False(t, p.newCA, p.reason)
	out, s, err := issue(p, data, names, DefaultCAValidity, DefaultCertValidity, t0)
	require.NoError(t, err)
	assert.Equal(t, caPEM, out[CACertKey])
	assert.NoError(t, s.leaf.CheckSignatureFrom(ca))
}
