package reference

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Case is one spec of a run, read from the suite's Ginkgo JSON report (-ginkgo.json-report).
type Case struct {
	// Name is the spec's full text as Ginkgo matches --focus against it: its containers' texts
	// and its own, joined by spaces. Suite nodes (BeforeSuite...) are named "[<node type>]".
	Name string
	// State is Ginkgo's: passed, failed, skipped, pending, panicked, interrupted, timedout,
	// aborted.
	State string
	// Message is the failure's (or a runtime skip's) message.
	Message string
	// File is where the spec is written, file:line with the file's last two path elements
	// (the reference has v1alpha1 and v1beta1 copies of most specs, under the same names).
	File string
	// Location is where it failed, in the same form.
	Location string
	RunTime  time.Duration
}

// ginkgoReport is the part of Ginkgo v2's types.Report that is read here; the report file is a
// JSON array of them (one per suite).
type ginkgoReport struct {
	SpecReports []struct {
		ContainerHierarchyTexts []string
		LeafNodeType            string
		LeafNodeText            string
		LeafNodeLocation        codeLocation
		State                   string
		RunTime                 time.Duration
		Failure                 struct {
			Message  string
			Location codeLocation
		}
	}
}

// LoadReport reads a Ginkgo JSON report. Specs that --focus/--skip filtered out (skipped with
// no message) are left out, as they did not run, and so are suite nodes (BeforeSuite...) that
// passed; a failed one is a case.
func LoadReport(path string) ([]Case, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseReport(raw)
}

// ParseReport is LoadReport of a report's content.
func ParseReport(raw []byte) ([]Case, error) {
	var reports []ginkgoReport
	if err := json.Unmarshal(raw, &reports); err != nil {
		return nil, fmt.Errorf("reading the Ginkgo JSON report: %w", err)
	}
	var cases []Case
	for _, r := range reports {
		for _, s := range r.SpecReports {
			suiteNode := s.LeafNodeType != "It" && s.LeafNodeType != ""
			// Not run (filtered out), or a suite node that went well: not a case.
			if (s.State == "skipped" && s.Failure.Message == "") || (suiteNode && s.State == "passed") {
				continue
			}
			texts := append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText)
			name := strings.TrimSpace(strings.Join(texts, " "))
			if suiteNode {
				name = strings.TrimSpace("[" + s.LeafNodeType + "] " + name)
			}
			cases = append(cases, Case{Name: name, State: s.State, Message: s.Failure.Message, RunTime: s.RunTime,
				File: s.LeafNodeLocation.String(), Location: s.Failure.Location.String()})
		}
	}
	return cases, nil
}

type codeLocation struct {
	FileName   string
	LineNumber int
}

func (l codeLocation) String() string {
	if l.FileName == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", filepath.Join(filepath.Base(filepath.Dir(l.FileName)), filepath.Base(l.FileName)), l.LineNumber)
}
