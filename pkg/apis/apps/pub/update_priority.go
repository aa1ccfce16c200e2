package pub

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// UpdatePriorityStrategy orders the pods of an update: by weights of label selectors, or by the
// value of an ordered label key. Only one of the two may be set.
type UpdatePriorityStrategy struct {
	// OrderPriority: pods are grouped by the first term whose orderedKey label they carry,
	// earlier terms first; within a group, the larger number ending the label's value goes first
	// ("o-10" before "o-9"; no trailing digits counts as 0).
	// +optional
	OrderPriority []UpdatePriorityOrderTerm `json:"orderPriority,omitempty"`
	// WeightPriority: a pod's priority is the sum of the weights of the terms it matches; higher
	// goes first.
	// +optional
	WeightPriority []UpdatePriorityWeightTerm `json:"weightPriority,omitempty"`
}

// UpdatePriorityOrderTerm orders pods by the value of one label.
type UpdatePriorityOrderTerm struct {
	OrderedKey string `json:"orderedKey"`
}

// UpdatePriorityWeightTerm adds Weight to the priority of the pods its selector matches.
type UpdatePriorityWeightTerm struct {
	// Weight, 0 to 100 (OpenKruise's webhook accepts 0 too).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Weight        int32                `json:"weight"`
	MatchSelector metav1.LabelSelector `json:"matchSelector"`
}

// UpdateScatterStrategy spreads the pods matching each term evenly over an update, rather than
// updating them one after another.
type UpdateScatterStrategy []UpdateScatterTerm

// UpdateScatterTerm selects pods by one label.
type UpdateScatterTerm struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}
