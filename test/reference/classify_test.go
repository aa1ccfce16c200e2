package reference

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/result.golden")

// TestClassifyGolden runs a hand-written Ginkgo report (every state the suite produces, a case
// --focus filtered out, a suite node) through rules that match by name, and by name and failure
// message, and compares what is printed with the golden file.
func TestClassifyGolden(t *testing.T) {
	rules, err := LoadRules("testdata/known.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := LoadReport("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	Print(&got, Classify(cases, rules))
	golden := filepath.Join("testdata", "result.golden")
	if *update {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("classification differs from %s (go test -run TestClassifyGolden -update to accept):\n--- got\n%s--- want\n%s", golden, got.String(), want)
	}
}

func TestClassifyFirstRuleWinsAndNeedsBothPatterns(t *testing.T) {
	rules, err := ParseRules([]byte(`rules:
  - {spec: 'A', failure: 'no node', class: environment, reason: one node}
  - {spec: 'A', class: known, reason: listed}
`))
	if err != nil {
		t.Fatal(err)
	}
	res := Classify([]Case{
		{Name: "A 1", State: "failed", Message: "there is no node"},
		{Name: "A 2", State: "failed", Message: "wrong value"},
		{Name: "B", State: "timedout", Message: "timed out", Location: "v1/x.go:3"},
	}, rules)
	want := []struct {
		class Class
		why   string
	}{{Environment, "one node"}, {Known, "listed"}, {Unexpected, "timed out (v1/x.go:3)"}}
	for i, w := range want {
		if res[i].Class != w.class || res[i].Why != w.why {
			t.Errorf("%s: got %s %q, want %s %q", res[i].Name, res[i].Class, res[i].Why, w.class, w.why)
		}
	}
}

func TestParseRulesRefusesBadRules(t *testing.T) {
	for name, in := range map[string]string{
		"bad regexp":     `rules: [{spec: '(', class: known, reason: r}]`,
		"empty spec":     `rules: [{spec: '', class: known, reason: r}]`,
		"bad failure":    `rules: [{spec: 'a', failure: '[', class: known, reason: r}]`,
		"unknown class":  `rules: [{spec: 'a', class: pass, reason: r}]`,
		"no reason":      `rules: [{spec: 'a', class: known}]`,
		"unknown field":  `rules: [{spec: 'a', class: known, reason: r, kind: x}]`,
		"not a rule set": `- spec: a`,
	} {
		if _, err := ParseRules([]byte(in)); err == nil {
			t.Errorf("%s: accepted %s", name, in)
		}
	}
}

// TestKnownYAML keeps the checked-in classification loadable, and every known difference
// pointing at where its reason is written.
func TestKnownYAML(t *testing.T) {
	rules, err := LoadRules("known.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Class == Known && !strings.Contains(r.Reason, "docs/") && !strings.Contains(r.Reason, "issue 34") {
			t.Errorf("known difference %q: the reason should name the docs that give it (docs/api.md...) or the issue fixing it", r.Spec)
		}
	}
}
