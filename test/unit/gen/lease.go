package gen

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeaseModifier changes a Lease.
type LeaseModifier func(*coordinationv1.Lease)

// Lease is a Lease named name, changed by mods in order.
func Lease(name string, mods ...LeaseModifier) *coordinationv1.Lease {
	return apply(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

func SetLeaseNamespace(ns string) LeaseModifier {
	return func(l *coordinationv1.Lease) { l.Namespace = ns }
}

func SetLeaseResourceVersion(rv string) LeaseModifier {
	return func(l *coordinationv1.Lease) { l.ResourceVersion = rv }
}

func SetLeaseHolder(identity string) LeaseModifier {
	return func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = &identity }
}

func SetLeaseDurationSeconds(s int32) LeaseModifier {
	return func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = &s }
}

func SetLeaseAcquireTime(at time.Time) LeaseModifier {
	return func(l *coordinationv1.Lease) { l.Spec.AcquireTime = &metav1.MicroTime{Time: at} }
}

func SetLeaseRenewTime(at time.Time) LeaseModifier {
	return func(l *coordinationv1.Lease) { l.Spec.RenewTime = &metav1.MicroTime{Time: at} }
}
