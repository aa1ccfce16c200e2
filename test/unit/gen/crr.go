package gen

import (
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// CRRModifier changes a ContainerRecreateRequest (CRR, the kind's short
// name).
type CRRModifier func(*appsv1alpha1.ContainerRecreateRequest)

// CRR is a ContainerRecreateRequest named name, changed by mods in order.
func CRR(name string, mods ...CRRModifier) *appsv1alpha1.ContainerRecreateRequest {
	return apply(&appsv1alpha1.ContainerRecreateRequest{ObjectMeta: metav1.ObjectMeta{Name: name}}, mods)
}

// CRRFrom is a copy of crr changed by mods; crr is left as it was.
func CRRFrom(crr *appsv1alpha1.ContainerRecreateRequest, mods ...CRRModifier) *appsv1alpha1.ContainerRecreateRequest {
	return apply(crr.DeepCopy(), mods)
}

func SetCRRName(name string) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) { c.Name = name }
}

func SetCRRNamespace(ns string) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) { c.Namespace = ns }
}

func SetCRRUID(uid types.UID) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) { c.UID = uid }
}

func SetCRRResourceVersion(rv string) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) { c.ResourceVersion = rv }
}

func SetCRRCreationTimestamp(at time.Time) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) { c.CreationTimestamp = metav1.NewTime(at) }
}

// SetCRRLabels replaces the request's labels with a copy of labels.
func SetCRRLabels(labels map[string]string) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) { c.Labels = maps.Clone(labels) }
}

// SetCRRRoutingLabels gives the request the labels admission writes: the
// node and pod UID it is routed to, and active.
func SetCRRRoutingLabels(node string, podUID types.UID) CRRModifier {
	return SetCRRLabels(map[string]string{
		appsv1alpha1.ContainerRecreateRequestNodeNameKey: node,
		appsv1alpha1.ContainerRecreateRequestPodUIDKey:   string(podUID),
		appsv1alpha1.ContainerRecreateRequestActiveKey:   "true",
	})
}

func SetCRRPodName(pod string) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.PodName = pod }
}

// SetCRRContainers makes the request's containers those named, in order,
// without a statusContext.
func SetCRRContainers(names ...string) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) {
		c.Spec.Containers = nil
		for _, n := range names {
			c.Spec.Containers = append(c.Spec.Containers, appsv1alpha1.ContainerRecreateRequestContainer{Name: n})
		}
	}
}

// SetCRRContainerContext sets the statusContext of the request's container
// named name.
func SetCRRContainerContext(name string, ctx appsv1alpha1.ContainerRecreateRequestContainerContext) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) {
		for i := range c.Spec.Containers {
			if c.Spec.Containers[i].Name == name {
				c.Spec.Containers[i].StatusContext = &ctx
			}
		}
	}
}

func SetCRRActiveDeadlineSeconds(s int64) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.ActiveDeadlineSeconds = &s }
}

func SetCRRTTLSecondsAfterFinished(s int32) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) { c.Spec.TTLSecondsAfterFinished = &s }
}

// setCRRStrategy changes the request's strategy, made empty first when it
// has none.
func setCRRStrategy(mut func(*appsv1alpha1.ContainerRecreateRequestStrategy)) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) {
		if c.Spec.Strategy == nil {
			c.Spec.Strategy = &appsv1alpha1.ContainerRecreateRequestStrategy{}
		}
		mut(c.Spec.Strategy)
	}
}

func SetCRRFailurePolicy(p appsv1alpha1.ContainerRecreateRequestFailurePolicyType) CRRModifier {
	return setCRRStrategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.FailurePolicy = p })
}

func SetCRROrderedRecreate(ordered bool) CRRModifier {
	return setCRRStrategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.OrderedRecreate = ordered })
}

func SetCRRForceRecreate(force bool) CRRModifier {
	return setCRRStrategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.ForceRecreate = force })
}

func SetCRRTerminationGracePeriodSeconds(seconds int64) CRRModifier {
	return setCRRStrategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.TerminationGracePeriodSeconds = &seconds })
}

func SetCRRUnreadyGracePeriodSeconds(seconds int64) CRRModifier {
	return setCRRStrategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.UnreadyGracePeriodSeconds = &seconds })
}

func SetCRRMinStartedSeconds(seconds int32) CRRModifier {
	return setCRRStrategy(func(s *appsv1alpha1.ContainerRecreateRequestStrategy) { s.MinStartedSeconds = seconds })
}

func SetCRRPhase(phase appsv1alpha1.ContainerRecreateRequestPhase) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) { c.Status.Phase = phase }
}

// SetCRRAdmitted writes what admission puts in the request's status: the
// Admitted condition, True since at with message, and phase Pending when
// it has none yet.
func SetCRRAdmitted(at time.Time, message string) CRRModifier {
	return func(c *appsv1alpha1.ContainerRecreateRequest) {
		if c.Status.Phase == "" {
			c.Status.Phase = appsv1alpha1.ContainerRecreateRequestPending
		}
		c.Status.Conditions = upsert(c.Status.Conditions, metav1.Condition{
			Type: appsv1alpha1.ContainerRecreateRequestAdmitted, Status: metav1.ConditionTrue,
			Reason: appsv1alpha1.ContainerRecreateRequestReasonAdmitted, Message: message, LastTransitionTime: metav1.NewTime(at),
		}, func(c metav1.Condition) string { return c.Type })
	}
}
