package chart

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const (
	defaultRunbookBase = "https://github.com/nodekruise/kruise/blob/main/docs/operations.md"
	monitoringGroup    = "monitoring.coreos.com/v1"
)

// Every monitoring value on.
var monitoringOn = []string{"--set", "monitoring.podMonitor.enabled=true,monitoring.prometheusRule.enabled=true," +
	"monitoring.scrapeAnnotations=true,monitoring.grafanaDashboard.enabled=true"}

// renderWithMonitoring is render for a chart whose output includes monitoring.coreos.com objects,
// which client-go's scheme does not know: those come back as JSON, keyed as render keys objects.
func renderWithMonitoring(t *testing.T, args ...string) (rendered, map[string][]byte) {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", "kruise", chartDir(t), "--kube-version", kubeVersion}, args...)...)
	require.NoError(t, err, out)
	objs, monitoring := rendered{}, map[string][]byte{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	for {
		var raw runtime.RawExtension
		if err := dec.Decode(&raw); err != nil {
			break
		}
		doc := bytes.TrimSpace(raw.Raw)
		if len(doc) == 0 || string(doc) == "null" {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct{ Name, Namespace string }
		}
		require.NoError(t, json.Unmarshal(doc, &head))
		key := head.Kind + "/" + head.Metadata.Namespace + "/" + head.Metadata.Name
		if head.APIVersion == monitoringGroup {
			require.NotContains(t, monitoring, key, "rendered twice")
			monitoring[key] = doc
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		require.NoError(t, err, "rendered object does not decode into its API type:\n%s", doc)
		_, err = meta.Accessor(obj)
		require.NoError(t, err)
		require.NotContains(t, objs, key, "rendered twice")
		objs[key] = obj
	}
	return objs, monitoring
}

func monitoringFile(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(chartDir(t), "monitoring", name)
}

// alertRules is monitoring/alerts.yaml.
type alertRules struct {
	Groups []ruleGroup `json:"groups"`
}

func readAlertRules(t *testing.T) alertRules {
	t.Helper()
	raw, err := os.ReadFile(monitoringFile(t, "alerts.yaml"))
	require.NoError(t, err)
	js, err := yaml.YAMLToJSON(raw)
	require.NoError(t, err)
	var rules alertRules
	require.NoError(t, decodeStrict(js, &rules), "alerts.yaml has a field a PrometheusRule does not")
	require.NotEmpty(t, rules.Groups)
	return rules
}

// promtool is $KRUISE_PROMTOOL, which the Makefile sets from hack/install-prometheus.sh.
func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("KRUISE_PROMTOOL")
	if p == "" {
		t.Skip("KRUISE_PROMTOOL is not set: run `make test-integration`, or set it to the path hack/install-prometheus.sh prints")
	}
	return p
}

// The rule file is valid for Prometheus, and its unit tests (alerts_test.yaml) pass.
func TestAlertRulesPromtool(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = filepath.Join(chartDir(t), "monitoring")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
		assert.Contains(t, string(out), "SUCCESS", "promtool %s", strings.Join(args, " "))
	}
}

// Every alert has what on-call needs (a for, a severity, a summary and description, a runbook
// that exists in docs/operations.md), and alerts_test.yaml has a case where it fires and one
// where it does not.
func TestAlertRulesComplete(t *testing.T) {
	rules := readAlertRules(t)
	docs, err := os.ReadFile(filepath.Join(chartDir(t), "..", "..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	raw, err := os.ReadFile(monitoringFile(t, "alerts_test.yaml"))
	require.NoError(t, err)
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				AlertName string           `json:"alertname"`
				ExpAlerts []map[string]any `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &tests))
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.AlertName] = true
			} else {
				silent[a.AlertName] = true
			}
		}
	}

	seen := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			name := r.Alert
			assert.False(t, seen[name], "%s defined twice", name)
			seen[name] = true
			if assert.NotNil(t, r.For, "%s has no for:", name) {
				assert.NotEqual(t, "0s", *r.For, name)
			}
			assert.Contains(t, []string{"critical", "warning", "info"}, r.Labels["severity"], "%s severity", name)
			assert.NotEmpty(t, r.Annotations["summary"], "%s summary", name)
			assert.NotEmpty(t, r.Annotations["description"], "%s description", name)
			assert.Equal(t, defaultRunbookBase+"#"+strings.ToLower(name), r.Annotations["runbook_url"], name)
			assert.True(t, regexp.MustCompile(`(?m)^### `+name+`$`).Match(docs), "%s has no runbook section in docs/operations.md", name)
			assert.True(t, fires[name], "alerts_test.yaml has no case where %s fires", name)
			assert.True(t, silent[name], "alerts_test.yaml has no case where %s does not fire", name)
		}
	}
	assert.NotEmpty(t, seen)
	for name := range fires {
		assert.True(t, seen[name], "alerts_test.yaml tests %s, which alerts.yaml does not define", name)
	}
}

// With the default values the chart renders none of the monitoring objects and no scrape
// annotations (deploy/base, rendered from the defaults, stays as it is).
func TestRenderMonitoringOffByDefault(t *testing.T) {
	objs, monitoring := renderWithMonitoring(t)
	assert.Empty(t, monitoring)
	assert.NotContains(t, objs, "ConfigMap/kruise-system/kruise-grafana-dashboard")
	assert.Empty(t, objs.deployment(t).Spec.Template.Annotations)
	assert.Empty(t, objs.daemonSet(t).Spec.Template.Annotations)
}

func TestRenderPodMonitors(t *testing.T) {
	objs, monitoring := renderWithMonitoring(t, append(monitoringOn,
		"--set", "monitoring.podMonitor.namespace=monitoring,monitoring.podMonitor.labels.release=kube-prometheus-stack",
		"--set", "monitoring.podMonitor.interval=15s,monitoring.podMonitor.scrapeTimeout=5s")...)
	pods := map[string]map[string]string{
		"kruise-controller": objs.deployment(t).Spec.Template.Labels,
		"kruise-daemon":     objs.daemonSet(t).Spec.Template.Labels,
	}
	for component, podLabels := range pods {
		raw, ok := monitoring["PodMonitor/monitoring/"+component]
		require.True(t, ok, "no PodMonitor for %s in %v", component, keysOf(monitoring))
		var pm podMonitor
		require.NoError(t, decodeStrict(raw, &pm), "%s:\n%s", component, raw)
		assert.Equal(t, "kube-prometheus-stack", pm.Labels["release"], component)
		assert.Equal(t, "kruise", pm.Labels["app.kubernetes.io/part-of"], component)
		assert.Equal(t, []string{"kruise-system"}, pm.Spec.NamespaceSelector.MatchNames, "%s: the pods stay in the installation namespace", component)
		for k, v := range pm.Spec.Selector.MatchLabels {
			assert.Equal(t, v, podLabels[k], "%s: the selector matches the component's pods", component)
		}
		require.Len(t, pm.Spec.PodMetricsEndpoints, 1, component)
		ep := pm.Spec.PodMetricsEndpoints[0]
		require.NotNil(t, ep.Port)
		assert.Equal(t, "metrics", *ep.Port, component)
		assert.Equal(t, "/metrics", ep.Path, component)
		assert.Equal(t, "15s", ep.Interval, component)
		assert.Equal(t, "5s", ep.ScrapeTimeout, component)
		// The contract of labels (the alert rules and the dashboard rely on it).
		require.Len(t, ep.RelabelConfigs, 2, component)
		node, comp := ep.RelabelConfigs[0], ep.RelabelConfigs[1]
		assert.Equal(t, relabelConfig{Action: "replace", SourceLabels: []string{"__meta_kubernetes_pod_node_name"}, TargetLabel: "node"}, node, component)
		require.NotNil(t, comp.Replacement)
		assert.Equal(t, component, *comp.Replacement)
		assert.Equal(t, "component", comp.TargetLabel)
		assert.Equal(t, "replace", comp.Action)
		assert.Empty(t, comp.SourceLabels)
		// The controller's workload series keep their own namespace, and its per-node gauge
		// its own node.
		assert.Equal(t, component == "kruise-controller", ep.HonorLabels, component)
	}
	for _, c := range objs.deployment(t).Spec.Template.Spec.Containers[0].Ports {
		if c.Name == "metrics" {
			return
		}
	}
	t.Error("the controller has no container port named metrics for the PodMonitor")
}

// Nothing to scrape, nothing to monitor: a controller on a unix socket and a release without
// the daemon get no PodMonitor.
func TestRenderPodMonitorsLeftOut(t *testing.T) {
	objs, monitoring := renderWithMonitoring(t, append(monitoringOn, "--set", "manager.hostNetwork=true,manager.addr=unix:///run/kruise/controller.sock")...)
	assert.NotContains(t, monitoring, "PodMonitor/kruise-system/kruise-controller")
	assert.Contains(t, monitoring, "PodMonitor/kruise-system/kruise-daemon")
	assert.Empty(t, objs.deployment(t).Spec.Template.Annotations, "no scrape annotations for a socket")

	_, monitoring = renderWithMonitoring(t, append(monitoringOn, "--set", "featureGates=KruiseDaemon=false")...)
	assert.Contains(t, monitoring, "PodMonitor/kruise-system/kruise-controller")
	assert.NotContains(t, monitoring, "PodMonitor/kruise-system/kruise-daemon")
}

// The PrometheusRule carries exactly the groups of alerts.yaml (the file promtool tests), with
// the runbook URLs' base replaced by the value.
func TestRenderPrometheusRule(t *testing.T) {
	want := readAlertRules(t)
	_, monitoring := renderWithMonitoring(t, monitoringOn...)
	raw, ok := monitoring["PrometheusRule/kruise-system/kruise"]
	require.True(t, ok, "no PrometheusRule in %v", keysOf(monitoring))
	var pr prometheusRule
	require.NoError(t, decodeStrict(raw, &pr), "%s", raw)
	assert.Equal(t, want.Groups, pr.Spec.Groups, "the PrometheusRule's groups are alerts.yaml's")

	base := "https://wiki.example/kruise/runbooks"
	_, monitoring = renderWithMonitoring(t, append(monitoringOn,
		"--set", "monitoring.prometheusRule.runbookBaseURL="+base+"/",
		"--set", "monitoring.prometheusRule.namespace=monitoring,monitoring.prometheusRule.labels.release=kube-prometheus-stack")...)
	raw, ok = monitoring["PrometheusRule/monitoring/kruise"]
	require.True(t, ok, "no PrometheusRule in namespace monitoring in %v", keysOf(monitoring))
	pr = prometheusRule{}
	require.NoError(t, decodeStrict(raw, &pr))
	assert.Equal(t, "kube-prometheus-stack", pr.Labels["release"])
	n := 0
	for gi, g := range pr.Spec.Groups {
		for ri, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			assert.Equal(t, base+"#"+strings.ToLower(r.Alert), r.Annotations["runbook_url"])
			// Everything else is as in alerts.yaml.
			w := want.Groups[gi].Rules[ri]
			w.Annotations = maps(w.Annotations, "runbook_url", r.Annotations["runbook_url"])
			assert.Equal(t, w, r)
		}
	}
	assert.Positive(t, n)
}

func TestRenderGrafanaDashboard(t *testing.T) {
	want, err := os.ReadFile(monitoringFile(t, "dashboard.json"))
	require.NoError(t, err)
	objs, _ := renderWithMonitoring(t, monitoringOn...)
	cm, ok := objs["ConfigMap/kruise-system/kruise-grafana-dashboard"].(*corev1.ConfigMap)
	require.True(t, ok, "no dashboard ConfigMap in %v", objs.keys())
	assert.Equal(t, "1", cm.Labels["grafana_dashboard"], "the Grafana sidecar's default label")
	assert.Equal(t, strings.TrimSpace(string(want)), cm.Data["kruise.json"], "the data is dashboard.json")
	assert.True(t, json.Valid([]byte(cm.Data["kruise.json"])))

	objs, _ = renderWithMonitoring(t, append(monitoringOn,
		"--set", "monitoring.grafanaDashboard.namespace=grafana",
		"--set", "monitoring.grafanaDashboard.labels.grafana_dashboard=null,monitoring.grafanaDashboard.labels.dashboards=kruise",
		"--set", "monitoring.grafanaDashboard.annotations.grafana_folder=Kruise")...)
	cm, ok = objs["ConfigMap/grafana/kruise-grafana-dashboard"].(*corev1.ConfigMap)
	require.True(t, ok, "no dashboard ConfigMap in namespace grafana in %v", objs.keys())
	assert.Equal(t, "kruise", cm.Labels["dashboards"])
	assert.NotContains(t, cm.Labels, "grafana_dashboard")
	assert.Equal(t, "Kruise", cm.Annotations["grafana_folder"])
}

func TestRenderScrapeAnnotations(t *testing.T) {
	objs, _ := renderWithMonitoring(t, "--set", "monitoring.scrapeAnnotations=true,manager.metrics.port=8080,daemon.port=9999")
	assert.Equal(t, map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics"},
		objs.deployment(t).Spec.Template.Annotations)
	assert.Equal(t, map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9999", "prometheus.io/path": "/metrics"},
		objs.daemonSet(t).Spec.Template.Annotations)
}

func keysOf(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// maps is a copy of m with key set to value.
func maps(m map[string]string, key, value string) map[string]string {
	out := map[string]string{key: value}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}
