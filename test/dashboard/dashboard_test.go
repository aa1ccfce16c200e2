package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nodekruise/kruise/test/repo"
)

// datasourceRef is how every panel and query names its data source: the dashboard's
// `datasource` variable, never a UID of one Grafana's data source.
var datasourceRef = Datasource{Type: "prometheus", UID: "${datasource}"}

func load(t *testing.T) (*Dashboard, []byte) {
	t.Helper()
	d, raw, err := Load(repo.Path(t, Path...))
	if err != nil {
		t.Fatal(err)
	}
	return d, raw
}

// The dashboard is a Grafana dashboard in the shape the Grafana sidecar loads from a ConfigMap
// (and the import dialog takes): one JSON object with a stable uid, no import-time inputs.
func TestDashboardShape(t *testing.T) {
	d, raw := load(t)

	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&top); err != nil {
		t.Fatalf("the dashboard is not one JSON object: %v", err)
	}
	if dec.More() {
		t.Error("the dashboard file holds more than one JSON value")
	}
	if d.UID != "kruise-overview" {
		t.Errorf("uid = %q, want kruise-overview (links and the sidecar's updates rely on it)", d.UID)
	}
	if d.Title == "" {
		t.Error("the dashboard has no title")
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion = %d, want a current Grafana's (36 or later: data sources as references)", d.SchemaVersion)
	}
	if id, ok := top["id"]; ok && string(id) != "null" {
		t.Errorf("top-level id = %s, want null: a fixed id would overwrite another dashboard of the same id on import", id)
	}
	for _, key := range []string{"__inputs", "__requires"} {
		if _, ok := top[key]; ok {
			t.Errorf("the dashboard has %s: the sidecar does not resolve import-time inputs", key)
		}
	}
	checkVariables(t, d)
	checkPanels(t, d)
	checkNoFixedDatasource(t, raw)
}

func checkVariables(t *testing.T, d *Dashboard) {
	vars := map[string]Variable{}
	for _, v := range d.Templating.List {
		if _, dup := vars[v.Name]; dup {
			t.Errorf("variable %s is defined twice", v.Name)
		}
		vars[v.Name] = v
	}
	ds, ok := vars["datasource"]
	if q, _ := ds.QueryText(); !ok || ds.Type != "datasource" || q != "prometheus" {
		t.Errorf("variable datasource = %+v, want type datasource with query prometheus", ds)
	}
	for _, name := range []string{"node", "kind", "namespace", "name"} {
		v, ok := vars[name]
		if !ok {
			t.Errorf("variable %s is missing", name)
			continue
		}
		q, err := v.QueryText()
		if err != nil {
			t.Error(err)
		}
		if _, _, isLV := LabelValues(q); v.Type != "query" || !isLV {
			t.Errorf("variable %s: type %q query %q, want a query variable of label_values(...)", name, v.Type, q)
		}
		if v.Datasource == nil || *v.Datasource != datasourceRef {
			t.Errorf("variable %s: datasource %+v, want %+v", name, v.Datasource, datasourceRef)
		}
		if v.IncludeAll && v.AllValue != ".*" {
			// Without an allValue Grafana sends "All" as every value it has listed, which
			// drops series that appeared since the list was loaded.
			t.Errorf("variable %s includes All with allValue %q, want .*", name, v.AllValue)
		}
	}
}

// panelTypes are the panel types the dashboard may use: Grafana's built-in ones.
var panelTypes = []string{"row", "timeseries", "stat", "bargauge", "table", "gauge", "text"}

func checkPanels(t *testing.T, d *Dashboard) {
	ids := map[int]string{}
	used := map[string]bool{}
	for _, p := range d.AllPanels() {
		used[p.Type] = true
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID <= 0 {
			t.Errorf("%s: id must be positive", where)
		}
		if other, dup := ids[p.ID]; dup {
			t.Errorf("%s: id already used by %s", where, other)
		}
		ids[p.ID] = where
		if !slices.Contains(panelTypes, p.Type) {
			t.Errorf("%s: type %q is not one of %v", where, p.Type, panelTypes)
		}
		if p.Title == "" {
			t.Errorf("%s: no title", where)
		}
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v is off the 24-column grid", where, g)
		}
		if p.Type == "row" {
			if len(p.Targets) > 0 {
				t.Errorf("%s: a row has queries", where)
			}
			continue
		}
		if p.Description == "" {
			t.Errorf("%s: no description (the panel's (i) tells what it shows)", where)
		}
		if p.Datasource == nil || *p.Datasource != datasourceRef {
			t.Errorf("%s: datasource %+v, want %+v", where, p.Datasource, datasourceRef)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no queries", where)
		}
		refs := map[string]bool{}
		for i, q := range p.Targets {
			if q.RefID == "" || refs[q.RefID] {
				t.Errorf("%s query #%d: refId %q empty or repeated", where, i, q.RefID)
			}
			refs[q.RefID] = true
			if strings.TrimSpace(q.Expr) == "" {
				t.Errorf("%s query %s: no expr", where, q.RefID)
			}
			if q.Datasource != nil && *q.Datasource != datasourceRef {
				t.Errorf("%s query %s: datasource %+v, want %+v", where, q.RefID, q.Datasource, datasourceRef)
			}
		}
	}
	for _, want := range []string{"timeseries", "stat", "bargauge", "table"} {
		if !used[want] {
			t.Errorf("no %s panel", want)
		}
	}
	checkNoOverlap(t, d.Panels)
}

// checkNoOverlap fails on panels that cover the same grid cell: Grafana would move them.
func checkNoOverlap(t *testing.T, panels []Panel) {
	owner := map[[2]int]int{}
	for _, p := range panels {
		g := p.GridPos
		for y := g.Y; y < g.Y+g.H; y++ {
			for x := g.X; x < g.X+g.W; x++ {
				if other, taken := owner[[2]int{x, y}]; taken {
					t.Errorf("panels %d and %d overlap at x=%d y=%d", other, p.ID, x, y)
					return
				}
				owner[[2]int{x, y}] = p.ID
			}
		}
	}
}

// checkNoFixedDatasource walks the whole JSON: every "datasource" is the variable (or Grafana's
// own, for the built-in annotations), so the dashboard works in any Grafana.
func checkNoFixedDatasource(t *testing.T, raw []byte) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if k == "datasource" {
					checkDatasourceValue(t, path+"."+k, child)
				}
				walk(path+"."+k, child)
			}
		case []any:
			for i, child := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), child)
			}
		}
	}
	walk("$", doc)
}

func checkDatasourceValue(t *testing.T, path string, v any) {
	switch ds := v.(type) {
	case string:
		if ds != "${datasource}" && ds != "$datasource" {
			t.Errorf("%s = %q: a fixed data source", path, ds)
		}
	case map[string]any:
		uid, _ := ds["uid"].(string)
		typ, _ := ds["type"].(string)
		if uid != "${datasource}" && !(typ == "grafana" && uid == "-- Grafana --") {
			t.Errorf("%s = %v: a fixed data source uid", path, ds)
		}
	}
}

// Every metric a query selects is one kruise documents, under the component that exports it,
// and every selector says which component it reads (the scrape's `component` label), so that a
// daemon's and a controller's series of the same name (process_*, workqueue_*) never mix.
func TestDashboardUsesDocumentedMetrics(t *testing.T) {
	d, _ := load(t)
	uses, err := d.Uses(d.Values("1m", "1h"))
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedSeries()
	seen := map[string]bool{}
	for _, u := range uses {
		seen[u.Metric] = true
		in, ok := documented[u.Metric]
		if !ok {
			t.Errorf("%s: %s is not a metric kruise documents (a histogram is selected by its _bucket, _sum or _count)", u.Where, u.Metric)
			continue
		}
		comps := u.Components()
		if len(comps) == 0 {
			t.Errorf("%s: %s has no component=\"...\" matcher", u.Where, u.Metric)
		}
		for _, c := range comps {
			if !exportedBy(in, c) {
				t.Errorf("%s: %s selected with component=%q, which does not export it", u.Where, u.Metric, c)
			}
		}
	}
	// The minimum: a dashboard without these is not the one asked for.
	for _, want := range []string{
		"kruise_crr_completed_total", "kruise_daemon_container_recreate_duration_seconds_bucket",
		"kruise_crr_waiting_on_absent_daemon", "kruise_daemon_image_pulls_total",
		"kruise_daemon_image_pull_failures_total", "kruise_daemon_image_pulls_in_flight",
		"kruise_daemon_credential_provider_errors_total", "kruise_workload_replicas", "kruise_workload_paused",
		"kruise_workload_partition", "kruise_workload_progress_deadline_exceeded", "process_cpu_seconds_total",
		"process_resident_memory_bytes", "go_goroutines", "kruise_webhook_admission_duration_seconds_bucket",
		"kruise_webhook_admission_requests_total", "kruise_webhook_certificate_expiry_timestamp_seconds",
		"leader_election_master_status", "workqueue_depth", "workqueue_retries_total",
	} {
		if !seen[want] {
			t.Errorf("no query selects %s", want)
		}
	}
}

func exportedBy(in exporter, component string) bool {
	for e, label := range componentLabel {
		if label == component && in&e != 0 {
			return true
		}
	}
	return false
}

// The set above is the documented one: every name in it is in docs/operations.md (the Go runtime's
// and the process's under their `go_*` and `process_*` rows).
func TestDocumentedSetIsInOperationsDoc(t *testing.T) {
	raw, err := os.ReadFile(repo.Path(t, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, m := range documentedMetrics {
		want := "`" + m.name + "`"
		for _, prefix := range []string{"go_", "process_"} {
			if strings.HasPrefix(m.name, prefix) {
				want = "`" + prefix + "*`"
			}
		}
		if !strings.Contains(doc, want) {
			t.Errorf("%s is in the test's documented set but docs/operations.md has no %s", m.name, want)
		}
	}
}
