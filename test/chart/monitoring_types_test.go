package chart

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The monitoring.coreos.com/v1 objects the chart renders, as the Prometheus Operator's API
// (v0.95) spells their fields. Its Go module needs newer k8s.io libraries than kruise pins, so the
// fields the chart may write are mirrored here: decodeStrict refuses any other, so a misspelt or
// misplaced field fails the test instead of being dropped by the operator's API server.

type podMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              podMonitorSpec `json:"spec"`
}

type podMonitorSpec struct {
	JobLabel            string               `json:"jobLabel,omitempty"`
	PodTargetLabels     []string             `json:"podTargetLabels,omitempty"`
	PodMetricsEndpoints []podMetricsEndpoint `json:"podMetricsEndpoints"`
	Selector            metav1.LabelSelector `json:"selector"`
	NamespaceSelector   namespaceSelector    `json:"namespaceSelector,omitempty"`
	SampleLimit         *int64               `json:"sampleLimit,omitempty"`
}

type namespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

type podMetricsEndpoint struct {
	Port                 *string             `json:"port,omitempty"`
	PortNumber           *int32              `json:"portNumber,omitempty"`
	Path                 string              `json:"path,omitempty"`
	Scheme               *string             `json:"scheme,omitempty"`
	Interval             string              `json:"interval,omitempty"`
	ScrapeTimeout        string              `json:"scrapeTimeout,omitempty"`
	HonorLabels          bool                `json:"honorLabels,omitempty"`
	HonorTimestamps      *bool               `json:"honorTimestamps,omitempty"`
	MetricRelabelConfigs []relabelConfig     `json:"metricRelabelings,omitempty"`
	RelabelConfigs       []relabelConfig     `json:"relabelings,omitempty"`
	Params               map[string][]string `json:"params,omitempty"`
}

type relabelConfig struct {
	SourceLabels []string `json:"sourceLabels,omitempty"`
	Separator    *string  `json:"separator,omitempty"`
	TargetLabel  string   `json:"targetLabel,omitempty"`
	Regex        string   `json:"regex,omitempty"`
	Modulus      int64    `json:"modulus,omitempty"`
	Replacement  *string  `json:"replacement,omitempty"`
	Action       string   `json:"action,omitempty"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              prometheusRuleSpec `json:"spec"`
}

type prometheusRuleSpec struct {
	Groups []ruleGroup `json:"groups,omitempty"`
}

type ruleGroup struct {
	Name                    string            `json:"name"`
	Labels                  map[string]string `json:"labels,omitempty"`
	Interval                *string           `json:"interval,omitempty"`
	QueryOffset             *string           `json:"query_offset,omitempty"`
	Rules                   []rule            `json:"rules,omitempty"`
	PartialResponseStrategy string            `json:"partial_response_strategy,omitempty"`
	Limit                   *int              `json:"limit,omitempty"`
}

type rule struct {
	Record        string            `json:"record,omitempty"`
	Alert         string            `json:"alert,omitempty"`
	Expr          string            `json:"expr"`
	For           *string           `json:"for,omitempty"`
	KeepFiringFor *string           `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// decodeStrict decodes JSON into out, refusing fields out does not have.
func decodeStrict(raw []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("strict decode: %w", err)
	}
	return nil
}
