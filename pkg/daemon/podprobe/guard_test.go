package podprobe

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func podWithIPs(ips ...string) *corev1.Pod {
	p := &corev1.Pod{}
	for i, ip := range ips {
		if i == 0 {
			p.Status.PodIP = ip
		}
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	return p
}

// TCP and HTTP probes reach only an address the pod owns, and never the
// node's own, loopback, link-local, unspecified or multicast ones.
func TestTargetGuard(t *testing.T) {
	node := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("10.244.0.1")}
	hostNet := podWithIPs("192.0.2.10")
	hostNet.Spec.HostNetwork = true
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		specIP string
		node   []netip.Addr
		want   string
		err    error
	}{
		{name: "the pod's IP", pod: podWithIPs("10.244.0.7"), specIP: "10.244.0.7", node: node, want: "10.244.0.7"},
		{name: "no spec IP: the primary", pod: podWithIPs("10.244.0.7", "fd00::7"), node: node, want: "10.244.0.7"},
		{name: "the pod's second IP", pod: podWithIPs("10.244.0.7", "fd00::7"), specIP: "fd00::7", node: node, want: "fd00::7"},
		{name: "host network pod", pod: hostNet, specIP: "192.0.2.10", node: node, err: errHostNetwork},
		{name: "IP not the pod's", pod: podWithIPs("10.244.0.7"), specIP: "10.244.0.8", node: node, err: errNotPodIP},
		{name: "garbage IP", pod: podWithIPs("10.244.0.7"), specIP: "ten", node: node, err: errNotPodIP},
		{name: "pod without IP", pod: podWithIPs(), specIP: "10.244.0.7", node: node, err: errNoPodIP},
		{name: "loopback", pod: podWithIPs("127.0.0.1"), specIP: "127.0.0.1", node: node, err: errLoopback},
		{name: "loopback v6", pod: podWithIPs("::1"), specIP: "::1", node: node, err: errLoopback},
		{name: "link-local", pod: podWithIPs("169.254.169.254"), specIP: "169.254.169.254", node: node, err: errLinkLocal},
		{name: "link-local v6", pod: podWithIPs("fe80::1"), node: node, err: errLinkLocal},
		{name: "unspecified", pod: podWithIPs("0.0.0.0"), specIP: "0.0.0.0", node: node, err: errUnspecified},
		{name: "multicast", pod: podWithIPs("224.0.0.1"), node: node, err: errMulticast},
		{name: "broadcast", pod: podWithIPs("255.255.255.255"), node: node, err: errMulticast},
		{name: "the node's address", pod: podWithIPs("10.244.0.1"), specIP: "10.244.0.1", node: node, err: errNodeAddress},
		{name: "v4-mapped node address", pod: podWithIPs("::ffff:192.0.2.10"), node: node, err: errNodeAddress},
		{name: "node addresses unknown", pod: podWithIPs("10.244.0.7"), node: nil, err: errNodeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := target(tc.pod, tc.specIP, tc.node)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				assert.LessOrEqual(t, len(err.Error()), 64, "a short reason")
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got.String())
		})
	}
}

func TestInterfaceAddrsHaveLoopback(t *testing.T) {
	addrs, err := interfaceAddrs()
	assert.NoError(t, err)
	assert.Contains(t, addrs, netip.MustParseAddr("127.0.0.1"))
}
