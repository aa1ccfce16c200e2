package reference

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Class is what a case's result means for kruise.
type Class string

const (
	// Pass: the reference's case passes against kruise.
	Pass Class = "pass"
	// Known: a difference docs/api.md lists with its reason (or one being fixed).
	Known Class = "known"
	// Environment: the local cluster cannot run the case (one node, two cores, an image that
	// has no stand-in, storage it does not have).
	Environment Class = "environment"
	// Unexpected: a failure no rule explains.
	Unexpected Class = "unexpected"
	// Skipped: the case skipped itself at run time, or the run was cut short (REF_TIMEOUT, an
	// interrupt) before it finished: no verdict either way. Its message says which.
	Skipped Class = "skipped"
)

// Rule classifies the failing cases whose name (and failure message, if given) match.
type Rule struct {
	// Spec is a regular expression matched against the case's name.
	Spec string `json:"spec"`
	// Failure, if set, is a regular expression the failure message must match as well.
	Failure string `json:"failure,omitempty"`
	// Class is known or environment.
	Class Class `json:"class"`
	// Reason is printed with the case: for a known difference, docs/api.md's reason.
	Reason string `json:"reason"`

	spec, failure *regexp.Regexp
}

// LoadRules reads a classification file (test/reference/known.yaml).
func LoadRules(path string) ([]Rule, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseRules(raw)
}

// ParseRules is LoadRules of a file's content; every rule must compile and have a class and a
// reason.
func ParseRules(raw []byte) ([]Rule, error) {
	var file struct {
		Rules []Rule `json:"rules"`
	}
	if err := yaml.UnmarshalStrict(raw, &file); err != nil {
		return nil, fmt.Errorf("reading the classification: %w", err)
	}
	for i := range file.Rules {
		r := &file.Rules[i]
		var err error
		if r.spec, err = regexp.Compile(r.Spec); err != nil || r.Spec == "" {
			return nil, fmt.Errorf("rule %d: spec %q: want a regular expression (%v)", i+1, r.Spec, err)
		}
		if r.Failure != "" {
			if r.failure, err = regexp.Compile(r.Failure); err != nil {
				return nil, fmt.Errorf("rule %d: failure %q: %w", i+1, r.Failure, err)
			}
		}
		if r.Class != Known && r.Class != Environment {
			return nil, fmt.Errorf("rule %d (%s): class %q: want known or environment", i+1, r.Spec, r.Class)
		}
		if strings.TrimSpace(r.Reason) == "" {
			return nil, fmt.Errorf("rule %d (%s): no reason", i+1, r.Spec)
		}
	}
	return file.Rules, nil
}

func (r *Rule) matches(c Case) bool {
	return r.spec.MatchString(c.Name) && (r.failure == nil || r.failure.MatchString(c.Message))
}

// Classified is a case and what it means.
type Classified struct {
	Case
	Class Class
	// Why: the rule's reason, or the failure or skip message.
	Why string
	// Listed is set on a passing case that a rule names: the rule may be out of date.
	Listed *Rule
}

// Result is a classified run.
type Result []Classified

// Count is the number of cases of a class.
func (r Result) Count(c Class) int {
	n := 0
	for _, x := range r {
		if x.Class == c {
			n++
		}
	}
	return n
}

// Classify gives each case its class, by the first rule that matches a failing case; a failure
// no rule matches is unexpected. The result is sorted by name, then file.
func Classify(cases []Case, rules []Rule) Result {
	out := make(Result, 0, len(cases))
	for _, c := range cases {
		x := Classified{Case: c}
		var rule *Rule
		for i := range rules {
			if rules[i].matches(c) {
				rule = &rules[i]
				break
			}
		}
		switch c.State {
		case "passed":
			x.Class, x.Listed = Pass, rule
		case "skipped", "pending", "interrupted":
			x.Class, x.Why = Skipped, oneLine(c.Message)
		case "timedout":
			// The suite's own limit (REF_TIMEOUT) is no verdict on the case; a spec's is.
			if strings.Contains(c.Message, "A suite timeout occurred") {
				x.Class, x.Why = Skipped, oneLine(c.Message)
				break
			}
			x.Class, x.Why = Unexpected, failureLine(c)
			if rule != nil {
				x.Class, x.Why = rule.Class, oneLine(rule.Reason)
			}
		default:
			if rule != nil {
				x.Class, x.Why = rule.Class, oneLine(rule.Reason)
			} else {
				x.Class, x.Why = Unexpected, failureLine(c)
			}
		}
		out = append(out, x)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].File < out[j].File
	})
	return out
}

// Print writes a line per case (its name and where it is written), its reason indented under
// it, then the counts.
func Print(w io.Writer, res Result) {
	label := map[Class]string{Pass: "pass", Known: "known difference", Environment: "environment",
		Unexpected: "unexpected failure", Skipped: "skipped"}
	for _, x := range res {
		name := x.Name
		if x.File != "" {
			name += " (" + x.File + ")"
		}
		fmt.Fprintf(w, "%-19s %s\n", label[x.Class], name)
		if x.Why != "" {
			fmt.Fprintf(w, "%-19s   %s\n", "", x.Why)
		}
		if x.Listed != nil {
			fmt.Fprintf(w, "%-19s   (known.yaml lists it as %s: the rule may be out of date)\n", "", x.Listed.Class)
		}
	}
	fmt.Fprintf(w, "\n%d cases: %d pass, %d known difference, %d environment, %d unexpected failure, %d skipped\n",
		len(res), res.Count(Pass), res.Count(Known), res.Count(Environment), res.Count(Unexpected), res.Count(Skipped))
}

// failureLine is a failure condensed to one line: the message's words, cut at 300 bytes, and
// where it failed.
func failureLine(c Case) string {
	s := oneLine(c.Message)
	if s == "" {
		s = c.State
	}
	if c.Location != "" {
		s += " (" + c.Location + ")"
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
