package resourcedistribution

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/nodekruise/kruise/pkg/apis/apps/v1alpha1"
)

// conditionOrder is the order status lists the six conditions in, always all six.
var conditionOrder = []appsv1alpha1.ResourceDistributionConditionType{
	appsv1alpha1.ResourceDistributionGetResourceFailed,
	appsv1alpha1.ResourceDistributionCreateResourceFailed,
	appsv1alpha1.ResourceDistributionUpdateResourceFailed,
	appsv1alpha1.ResourceDistributionDeleteResourceFailed,
	appsv1alpha1.ResourceDistributionConflictOccurred,
	appsv1alpha1.ResourceDistributionNamespaceNotExists,
}

// reasonSucceeded is a condition's reason when no namespace failed that way.
const reasonSucceeded = "Succeeded"

// Status is the status after a pass: targets the matched namespaces, failures the namespaces
// (target or not: a failed delete) that failed and how, pending the targets whose write this
// pass did not get to (neither succeeded nor failed). A condition's reason is the message of its
// first failed namespace in name order, so that the same failures give the same status;
// lastTransitionTime moves only when a condition's status does.
func Status(old *appsv1alpha1.ResourceDistributionStatus, generation int64, targets []string, failures map[string]Failure, pending map[string]bool, now metav1.Time) appsv1alpha1.ResourceDistributionStatus {
	st := appsv1alpha1.ResourceDistributionStatus{Desired: int32(len(targets)), ObservedGeneration: generation}
	for _, ns := range targets {
		if _, failed := failures[ns]; !failed && !pending[ns] {
			st.Succeeded++
		}
	}
	st.Failed = st.Desired - st.Succeeded
	names := sortedKeys(failures)
	for _, typ := range conditionOrder {
		c := appsv1alpha1.ResourceDistributionCondition{Type: typ, Status: appsv1alpha1.ResourceDistributionConditionFalse, Reason: reasonSucceeded}
		for _, ns := range names {
			if f := failures[ns]; f.Condition == typ {
				if c.Status == appsv1alpha1.ResourceDistributionConditionFalse {
					c.Status, c.Reason = appsv1alpha1.ResourceDistributionConditionTrue, f.Message
				}
				c.FailedNamespaces = append(c.FailedNamespaces, ns)
			}
		}
		c.LastTransitionTime = now
		if i := slices.IndexFunc(old.Conditions, func(o appsv1alpha1.ResourceDistributionCondition) bool { return o.Type == typ }); i >= 0 &&
			old.Conditions[i].Status == c.Status {
			c.LastTransitionTime = old.Conditions[i].LastTransitionTime
		}
		st.Conditions = append(st.Conditions, c)
	}
	return st
}

// statusChanged reports whether a status write is needed.
func statusChanged(old, cur *appsv1alpha1.ResourceDistributionStatus) bool {
	return !equality.Semantic.DeepEqual(old, cur)
}
