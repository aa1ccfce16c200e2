// Package dashboard reads the Grafana dashboard the chart ships
// (deploy/charts/kruise/monitoring/dashboard.json) and the metric selectors of its queries, for
// the tests that hold it to the metrics kruise documents, exports and Prometheus can answer.
package dashboard

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Path is the dashboard's path in the repository.
var Path = []string{"deploy", "charts", "kruise", "monitoring", "dashboard.json"}

// Dashboard is the part of Grafana's dashboard model the tests read.
type Dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Panels []Panel `json:"panels"`
}

// Variable is a template variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *Datasource     `json:"datasource"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Multi      bool            `json:"multi"`
}

// QueryText is the variable's query: Grafana writes it as a string, or (newer editors) as an
// object whose "query" field holds it.
func (v Variable) QueryText() (string, error) {
	if len(v.Query) == 0 {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v.Query, &s); err == nil {
		return s, nil
	}
	var o struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(v.Query, &o); err != nil {
		return "", fmt.Errorf("variable %s: query is neither a string nor an object: %w", v.Name, err)
	}
	return o.Query, nil
}

// Panel is a panel, or a row (which holds its panels only while collapsed).
type Panel struct {
	ID          int         `json:"id"`
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	Datasource  *Datasource `json:"datasource"`
	GridPos     GridPos     `json:"gridPos"`
	Targets     []Target    `json:"targets"`
	Panels      []Panel     `json:"panels"`
	Collapsed   bool        `json:"collapsed"`
	Description string      `json:"description"`
}

// GridPos places a panel on the 24-column grid.
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
	Instant    bool        `json:"instant"`
	Format     string      `json:"format"`
}

// Datasource references a data source.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Load reads and decodes the dashboard at path, and returns its bytes too. Fields the model
// above does not name are ignored, as Grafana ignores fields it does not know.
func Load(path string) (*Dashboard, []byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the dashboard: %w", err)
	}
	var d Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, nil, fmt.Errorf("decoding the dashboard %s: %w", path, err)
	}
	return &d, raw, nil
}

// AllPanels returns every panel and row, those inside collapsed rows included, in order.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Query is one PromQL expression of the dashboard and where it is.
type Query struct {
	Where   string // `panel 201 "title" query A` or `variable node`
	PanelID int    // 0 for a variable's query
	RefID   string
	Expr    string // as written, Grafana variables unexpanded
	Instant bool   // Grafana asks for the value at the end of the range only (instant or table)
	Label   string // a variable's: the label whose values it lists
}

// labelValues matches a query variable's label_values(selector, label).
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)

// LabelValues splits a variable query label_values(selector, label).
func LabelValues(q string) (selector, label string, ok bool) {
	m := labelValues.FindStringSubmatch(q)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// Queries lists every panel target's expression, then the selector of every query variable.
func (d *Dashboard) Queries() ([]Query, error) {
	var out []Query
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			out = append(out, Query{
				Where:   fmt.Sprintf("panel %d %q query %s", p.ID, p.Title, t.RefID),
				PanelID: p.ID, RefID: t.RefID, Expr: t.Expr, Instant: t.Instant || t.Format == "table",
			})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, err := v.QueryText()
		if err != nil {
			return nil, err
		}
		sel, label, ok := LabelValues(q)
		if !ok {
			return nil, fmt.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
		}
		out = append(out, Query{Where: "variable " + v.Name, Expr: sel, Label: label})
	}
	return out, nil
}

// variableRef matches Grafana's variable syntaxes: $name, ${name}, ${name:format}, [[name]].
var variableRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)\]\]`)

// Expand substitutes Grafana variables in expr with vals. A reference starting with a digit
// ($1 in label_replace's replacement) is not a variable and stays; any other name missing from
// vals is an error.
func Expand(expr string, vals map[string]string) (string, error) {
	var missing []string
	out := variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variableRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		if name[0] >= '0' && name[0] <= '9' {
			return ref
		}
		v, ok := vals[name]
		if !ok {
			missing = append(missing, name)
			return ref
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%q uses undefined variables %s", expr, strings.Join(missing, ", "))
	}
	return out, nil
}

// Values are the substitutions that select everything: each query variable's "All" value, and
// the given lengths for Grafana's interval variables.
func (d *Dashboard) Values(rateInterval, rng string) map[string]string {
	vals := map[string]string{
		"__rate_interval": rateInterval,
		"__interval":      rateInterval,
		"__range":         rng,
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			vals[v.Name] = v.AllValue
		}
	}
	return vals
}

// Use is a metric selector of the dashboard and the query it is in.
type Use struct {
	Query
	Selector
}

// Uses expands every query with vals and returns its selectors, sorted by metric name.
func (d *Dashboard) Uses(vals map[string]string) ([]Use, error) {
	qs, err := d.Queries()
	if err != nil {
		return nil, err
	}
	var out []Use
	for _, q := range qs {
		expr, err := Expand(q.Expr, vals)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.Where, err)
		}
		sels, err := Selectors(expr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.Where, err)
		}
		if len(sels) == 0 {
			return nil, fmt.Errorf("%s: %q selects no metric", q.Where, q.Expr)
		}
		for _, s := range sels {
			out = append(out, Use{Query: q, Selector: s})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Metric < out[j].Metric })
	return out, nil
}
