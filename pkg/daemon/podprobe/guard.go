package podprobe

import (
	"errors"
	"net"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
)

// Why a TCP or HTTP probe was refused. They are the probe's Failed message:
// short and fixed.
var (
	errHostNetwork = errors.New("refused: the pod uses the host network")
	errNoPodIP     = errors.New("refused: the pod has no IP yet")
	errNotPodIP    = errors.New("refused: the address is not the pod's")
	errLoopback    = errors.New("refused: loopback address")
	errLinkLocal   = errors.New("refused: link-local address")
	errUnspecified = errors.New("refused: unspecified address")
	errMulticast   = errors.New("refused: multicast address")
	errNodeAddress = errors.New("refused: the address is the node's")
	errNodeUnknown = errors.New("refused: the node's addresses are unknown")
)

// target picks the address a TCP or HTTP probe of pod may reach, or says
// why none. specIP is the IP the NodePodProbe entry names (the controller's
// view); it must be one of the pod's IPs as this node's pod informer knows
// them, empty meaning the pod's primary IP. The probe leaves from the
// daemon, which is on the host network: it must not become a way to reach
// the node itself (loopback, the node's own addresses, which serve the
// kubelet and other host services), the link-local range (cloud metadata
// services), or anything the pod does not own. nodeAddrs are the node's
// addresses; nil means they could not be read, and refuses (an empty list
// is a node without any).
func target(pod *corev1.Pod, specIP string, nodeAddrs []netip.Addr) (netip.Addr, error) {
	if pod.Spec.HostNetwork {
		return netip.Addr{}, errHostNetwork
	}
	if nodeAddrs == nil {
		return netip.Addr{}, errNodeUnknown
	}
	podIPs := podAddrs(pod)
	if len(podIPs) == 0 {
		return netip.Addr{}, errNoPodIP
	}
	want := podIPs[0]
	if specIP != "" {
		ip, err := netip.ParseAddr(specIP)
		if err != nil {
			return netip.Addr{}, errNotPodIP
		}
		want = ip.Unmap()
	}
	owned := false
	for _, ip := range podIPs {
		if ip == want {
			owned = true
			break
		}
	}
	if !owned {
		return netip.Addr{}, errNotPodIP
	}
	if err := checkAddr(want, nodeAddrs); err != nil {
		return netip.Addr{}, err
	}
	return want, nil
}

// checkAddr refuses the kinds of address no probe may reach, whoever owns
// them.
func checkAddr(ip netip.Addr, nodeAddrs []netip.Addr) error {
	switch {
	case ip.IsLoopback():
		return errLoopback
	case ip.IsLinkLocalUnicast():
		return errLinkLocal
	case ip.IsUnspecified():
		return errUnspecified
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return errMulticast
	}
	if ip.Is4() && ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return errMulticast // broadcast: refused for the same reason
	}
	for _, n := range nodeAddrs {
		if n == ip {
			return errNodeAddress
		}
	}
	return nil
}

// podAddrs are the pod's IPs from its status, primary first.
func podAddrs(pod *corev1.Pod) []netip.Addr {
	var out []netip.Addr
	add := func(s string) {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return
		}
		ip = ip.Unmap()
		for _, have := range out {
			if have == ip {
				return
			}
		}
		out = append(out, ip)
	}
	add(pod.Status.PodIP)
	for _, p := range pod.Status.PodIPs {
		add(p.IP)
	}
	return out
}

// interfaceAddrs are the addresses of this network namespace's interfaces:
// kruise-daemon runs on the host network, so these are the node's own
// addresses, the CNI bridge's gateway address included, which the Node's
// status.addresses leave out.
func interfaceAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if addr, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, addr.Unmap())
		}
	}
	return out, nil
}
