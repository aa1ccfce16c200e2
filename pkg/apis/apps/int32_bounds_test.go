package apps_test

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// celBounded lists the 32-bit numbers that a CEL rule bounds instead of minimum/maximum (fields
// of core types, on which no marker can go), with a fragment of the rule at path's parent.
var celBounded = map[string]string{
	"spec.containers[].ports[].containerPort":  "p.containerPort <= 2147483647",
	"spec.containers[].ports[].hostPort":       "p.hostPort <= 2147483647",
	"spec.containers[].preStop.httpGet.port":   "self.httpGet.port <= 2147483647",
	"spec.containers[].preStop.tcpSocket.port": "self.tcpSocket.port <= 2147483647",
	"spec.parallelism":                         "self <= 2147483647",
	// CloneSet (both versions; v1beta1 under updateStrategy.rollingUpdate).
	"spec.scaleStrategy.maxUnavailable":                                                   "self <= 2147483647",
	"spec.updateStrategy.partition":                                                       "self <= 2147483647",
	"spec.updateStrategy.maxUnavailable":                                                  "self <= 2147483647",
	"spec.updateStrategy.maxSurge":                                                        "self <= 2147483647",
	"spec.updateStrategy.inPlaceUpdateStrategy.imagePreDownloadParallelism":               "self.imagePreDownloadParallelism <= 2147483647",
	"spec.updateStrategy.rollingUpdate.partition":                                         "self <= 2147483647",
	"spec.updateStrategy.rollingUpdate.maxUnavailable":                                    "self <= 2147483647",
	"spec.updateStrategy.rollingUpdate.maxSurge":                                          "self <= 2147483647",
	"spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy.imagePreDownloadParallelism": "self.imagePreDownloadParallelism <= 2147483647",
	// Advanced DaemonSet (both versions; its rollingUpdate fields are CloneSet v1beta1's paths).
	"spec.burstReplicas": "self <= 2147483647",
	// Advanced StatefulSet (v1beta1).
	"spec.reserveOrdinals[]": "o <= 2147483647",
	// AdvancedCronJob's BroadcastJob and ImageListPullJob templates.
	"spec.template.broadcastJobTemplate.spec.parallelism":     "self <= 2147483647",
	"spec.template.imageListPullJobTemplate.spec.parallelism": "self <= 2147483647",
	// PodProbeMarker: the probe (a core Probe).
	"spec.probes[].probe.initialDelaySeconds": "self.initialDelaySeconds <= 2147483647",
	"spec.probes[].probe.timeoutSeconds":      "self.timeoutSeconds <= 2147483647",
	"spec.probes[].probe.periodSeconds":       "self.periodSeconds <= 2147483647",
	"spec.probes[].probe.successThreshold":    "self.successThreshold <= 2147483647",
	"spec.probes[].probe.failureThreshold":    "self.failureThreshold <= 2147483647",
	"spec.probes[].probe.httpGet.port":        "self.httpGet.port <= 2147483647",
	"spec.probes[].probe.tcpSocket.port":      "self.tcpSocket.port <= 2147483647",
	"spec.probes[].probe.grpc.port":           "self.grpc.port <= 2147483647",
	// WorkloadSpread.
	"spec.subsets[].maxReplicas":                         "s.maxReplicas <= 2147483647",
	"spec.subsets[].preferredNodeSelectorTerms[].weight": "p.weight <= 2147483647",
	// UnitedDeployment.
	"spec.topology.subsets[].replicas":              "s.replicas <= 2147483647",
	"spec.topology.subsets[].minReplicas":           "s.minReplicas <= 2147483647",
	"spec.topology.subsets[].maxReplicas":           "s.maxReplicas <= 2147483647",
	"spec.updateStrategy.manualUpdate.partitions{}": "self[k] <= 2147483647",
	"status.subsetReplicas{}":                       "self[k] <= 2147483647",
	"status.updateStatus.currentPartitions{}":       "self[k] <= 2147483647",
}

// unbounded are the CRDs exempt, and why.
var unbounded = map[string]string{
	// Its spec is written by kruise-controller alone (RBAC gives it to no one else), from
	// PodProbeMarkers, which are bounded, and from pods' own probes. Its nested lists (pods of a
	// node, probes of a pod) would put CEL rules far over the API server's cost budget.
	"nodepodprobes.apps.kruise.io": "written by kruise-controller only, from bounded sources",
}

// The API server checks an "int32" field of a CRD only as an int64 and stores a larger number,
// which no Go client can then decode: every list and watch of the kind fails, for every object.
// So every int32 field, and every int-or-string field (decoded into an int32), must be bounded.
func TestEveryInt32FieldIsBounded(t *testing.T) {
	for name, crd := range readOurCRDs(t) {
		if _, ok := unbounded[name]; ok {
			continue
		}
		for _, v := range crd.Spec.Versions {
			var problems []string
			checkInt32Bounds(v.Schema.OpenAPIV3Schema, "", nil, &problems)
			sort.Strings(problems)
			assert.Empty(t, problems, "%s %s", name, v.Name)
		}
	}
}

// checkInt32Bounds walks s; rules holds the CEL rules of the schemas on the way down (the
// innermost last).
func checkInt32Bounds(s *apiextensionsv1.JSONSchemaProps, path string, rules []string, problems *[]string) {
	for _, r := range s.XValidations {
		rules = append(rules, r.Rule)
	}
	switch {
	case s.Type == "integer" && s.Format == "int32" && withinInt32(s):
		// Bounded by its schema (an Advanced StatefulSet's partition is an
		// int32 where CloneSet's, at the same path, is an int-or-string).
	case s.XIntOrString || (s.Type == "integer" && s.Format == "int32"):
		if frag, ok := celBounded[templatePath(path)]; ok {
			if !strings.Contains(strings.Join(rules, "\n"), frag) {
				*problems = append(*problems, path+": no CEL rule bounding it ("+frag+")")
			}
			break
		}
		if s.XIntOrString {
			*problems = append(*problems, path+": int-or-string without a CEL rule bounding it")
			break
		}
		if s.Maximum == nil || *s.Maximum > math.MaxInt32 {
			*problems = append(*problems, path+": no maximum within int32")
		}
		if s.Minimum == nil || *s.Minimum < math.MinInt32 {
			*problems = append(*problems, path+": no minimum within int32")
		}
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	for k, p := range s.Properties {
		if path == "" && k == "metadata" {
			continue
		}
		checkInt32Bounds(&p, join(k), rules, problems)
	}
	if s.Items != nil && s.Items.Schema != nil {
		checkInt32Bounds(s.Items.Schema, path+"[]", rules, problems)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		checkInt32Bounds(s.AdditionalProperties.Schema, path+"{}", rules, problems)
	}
}

// templatePath is path with a UnitedDeployment's template prefix taken off: its CloneSet and
// Advanced StatefulSet templates carry those kinds' spec schemas, rules included.
func templatePath(path string) string {
	for _, prefix := range []string{"spec.template.cloneSetTemplate.", "spec.template.advancedStatefulSetTemplate."} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			return rest
		}
	}
	return path
}

// withinInt32: s has a minimum and a maximum, both within int32.
func withinInt32(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.Minimum != nil && *s.Minimum >= math.MinInt32 && s.Maximum != nil && *s.Maximum <= math.MaxInt32
}
