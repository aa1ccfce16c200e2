package sidecarrules

import (
	"encoding/json"
	"fmt"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1beta1 "github.com/nodekruise/kruise/pkg/apis/apps/v1beta1"
)

// OpenKruise's allow-list of the pod annotations a SidecarSet may patch (patchPodMetadata): a
// JSON PatchAllowList under PatchAllowListKey in the ConfigMap ConfigurationName of the namespace
// kruise runs in. It is checked when a SidecarSet is admitted (the SidecarSet webhook), as
// OpenKruise does, so that a pod's creation never depends on it.
const (
	ConfigurationName = "kruise-configuration"
	PatchAllowListKey = "SidecarSet_PatchPodMetadata_WhiteList"
)

// PatchAllowList is the allow-list's JSON, OpenKruise's shape.
type PatchAllowList struct {
	Rules []PatchAllowRule `json:"rules"`
}

// PatchAllowRule allows the SidecarSets its selector matches (none: all) to patch the annotation
// keys one of its regular expressions matches (unanchored, as OpenKruise reads them).
type PatchAllowRule struct {
	Selector                  *metav1.LabelSelector `json:"selector,omitempty"`
	AllowedAnnotationKeyExprs []string              `json:"allowedAnnotationKeyExprs"`
}

// ParsePatchAllowList reads the allow-list's JSON; empty is no allow-list (nil).
func ParsePatchAllowList(raw string) (*PatchAllowList, error) {
	if raw == "" {
		return nil, nil
	}
	var l PatchAllowList
	if err := json.Unmarshal([]byte(raw), &l); err != nil {
		return nil, fmt.Errorf("%s/%s is not {\"rules\": [{\"selector\", \"allowedAnnotationKeyExprs\"}]}: %w", ConfigurationName, PatchAllowListKey, err)
	}
	return &l, nil
}

// CheckPatchAllowed says why ss may not patch its patchPodMetadata keys, or nil. With no
// allow-list, or no rule for ss, every key is allowed only when defaultsAllowed (the feature gate
// SidecarSetPatchPodMetadataDefaultsAllowed); otherwise each key must match a rule of ss.
func CheckPatchAllowed(ss *appsv1beta1.SidecarSet, list *PatchAllowList, defaultsAllowed bool) error {
	if len(ss.Spec.PatchPodMetadata) == 0 {
		return nil
	}
	var exprs []*regexp.Regexp
	if list != nil {
		for _, rule := range list.Rules {
			if rule.Selector != nil {
				sel, err := metav1.LabelSelectorAsSelector(rule.Selector)
				if err != nil {
					return fmt.Errorf("%s/%s: a rule's selector: %w", ConfigurationName, PatchAllowListKey, err)
				}
				if !sel.Matches(labels.Set(ss.Labels)) {
					continue
				}
			}
			for _, e := range rule.AllowedAnnotationKeyExprs {
				re, err := regexp.Compile(e)
				if err != nil {
					return fmt.Errorf("%s/%s: %q: %w", ConfigurationName, PatchAllowListKey, e, err)
				}
				exprs = append(exprs, re)
			}
		}
	}
	if len(exprs) == 0 {
		if defaultsAllowed {
			return nil
		}
		return fmt.Errorf("SidecarSet %s: patchPodMetadata needs an allow-list rule for it in ConfigMap %s, key %s", ss.Name, ConfigurationName, PatchAllowListKey)
	}
	for _, p := range ss.Spec.PatchPodMetadata {
		for key := range p.Annotations {
			allowed := false
			for _, re := range exprs {
				if re.MatchString(key) {
					allowed = true
					break
				}
			}
			if !allowed {
				return fmt.Errorf("SidecarSet %s: patchPodMetadata annotation %q is not allowed by ConfigMap %s, key %s", ss.Name, key, ConfigurationName, PatchAllowListKey)
			}
		}
	}
	return nil
}
