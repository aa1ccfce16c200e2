package healthz

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseAddr checks --addr-style addresses (health, metrics, the probe
// socket). Invariants: no panic; deterministic; an error comes with empty
// results; a unix address gives a clean absolute path that both unix: forms
// give back; anything else is TCP, unchanged; DialTarget agrees with
// ParseAddr, dials a TCP address with no or an unspecified host on
// loopback with the same port, and is idempotent.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{
		":10222", "0.0.0.0:10222", "[::]:10222", "10.0.0.1:80", "localhost:80",
		"unix:///run/kruise/controller.sock", "unix:/run/kruise/../kruise/c.sock", "unix://run/c.sock",
		"unix:c.sock", "unix://", "unix:", "no-port", "[::ffff:0.0.0.0]:1", "unix:80", ":", "",
		"[fe80::1%eth0]:8080", "host:port:extra", "unix:////double",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		network, address, err := ParseAddr(addr)
		n2, a2, err2 := ParseAddr(addr)
		if network != n2 || address != a2 || (err == nil) != (err2 == nil) {
			t.Fatalf("ParseAddr(%q) is not deterministic", addr)
		}
		dn, da, derr := DialTarget(addr)
		if err != nil {
			if network != "" || address != "" {
				t.Fatalf("ParseAddr(%q) = %q, %q with error %v", addr, network, address, err)
			}
			if derr == nil {
				t.Fatalf("DialTarget(%q) accepts what ParseAddr refuses: %v", addr, err)
			}
			return
		}
		switch network {
		case "unix":
			if !strings.HasPrefix(addr, "unix:") || !filepath.IsAbs(address) || filepath.Clean(address) != address {
				t.Fatalf("ParseAddr(%q) = unix %q", addr, address)
			}
			for _, again := range []string{"unix://" + address, "unix:" + address} {
				if n, a, err := ParseAddr(again); err != nil || n != "unix" || a != address {
					t.Fatalf("ParseAddr(%q) = %q, %q, %v; want unix %q", again, n, a, err, address)
				}
			}
			if derr != nil || dn != "unix" || da != address {
				t.Fatalf("DialTarget(%q) = %q, %q, %v", addr, dn, da, derr)
			}
		case "tcp":
			if address != addr || strings.HasPrefix(addr, "unix:") {
				t.Fatalf("ParseAddr(%q) = tcp %q", addr, address)
			}
			_, port, serr := net.SplitHostPort(addr)
			if (serr == nil) != (derr == nil) {
				t.Fatalf("DialTarget(%q): %v, but SplitHostPort: %v", addr, derr, serr)
			}
			if derr != nil {
				return
			}
			host, dport, err := net.SplitHostPort(da)
			if err != nil || dn != "tcp" || dport != port {
				t.Fatalf("DialTarget(%q) = %q, %q, %v", addr, dn, da, err)
			}
			if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
				t.Fatalf("DialTarget(%q) = %q: not a host to dial", addr, da)
			}
			if n, a, err := DialTarget(da); err != nil || n != dn || a != da {
				t.Fatalf("DialTarget(%q) = %q, %q, %v; want it unchanged", da, n, a, err)
			}
		default:
			t.Fatalf("ParseAddr(%q): network %q", addr, network)
		}
	})
}
