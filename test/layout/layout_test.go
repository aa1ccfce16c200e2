// Package layout keeps the tree as docs/architecture.md draws it: the tiers of pkg/ and the
// arrows between them, and the two pages that list every package (the README's layout and
// docs/architecture.md).
package layout

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nodekruise/kruise/test/repo"
)

const module = "github.com/nodekruise/kruise/"

// A tier may import its own tier and the tiers below it, never one above.
const (
	tierAPI       = iota // pkg/apis, pkg/client: API types and their generated client
	tierProcess          // pkg/process: the plumbing of every binary
	tierContract         // pkg/contract: what two components must agree on
	tierWorkload         // pkg/workload: the engine the workloads share
	tierComponent        // pkg/{controller,webhook,daemon,kubectlkruise}/<name>: one concern each
	tierBinary           // pkg/controller, pkg/daemon, pkg/kubectlkruise: each binary's assembly
	tierCommand          // cmd/: wiring only
)

var tierNames = []string{"api", "process", "contract", "workload", "component", "binary", "command"}

// place is where a package sits: its tier and, from the component tier up, which part of
// kruise it belongs to.
type place struct {
	tier int
	part string // controller, webhook, daemon, kubectlkruise; "" below the component tier
}

// placeOf places a package by its path under the module; ok is false for what is not
// product code (tests, benchmarks, build tools).
func placeOf(rel string) (place, bool) {
	first, rest, _ := strings.Cut(strings.TrimPrefix(rel, "pkg/"), "/")
	switch {
	case strings.HasPrefix(rel, "cmd/"):
		return place{tier: tierCommand}, true
	case !strings.HasPrefix(rel, "pkg/"):
		return place{}, false
	}
	switch first {
	case "apis", "client":
		return place{tier: tierAPI}, true
	case "process":
		return place{tier: tierProcess}, true
	case "contract":
		return place{tier: tierContract}, true
	case "workload":
		return place{tier: tierWorkload}, true
	case "controller", "daemon", "kubectlkruise":
		if rest == "" {
			return place{tier: tierBinary, part: first}, true
		}
		return place{tier: tierComponent, part: first}, true
	case "webhook":
		return place{tier: tierComponent, part: first}, true
	}
	return place{tier: -1}, true
}

// forbidden says, for a component's part, the parts it must never import whatever the tier:
// the daemon and the plugin are other binaries, and a webhook answers from its own caches,
// never through a controller's code.
var forbidden = map[string][]string{
	"webhook":       {"controller", "daemon", "kubectlkruise"},
	"controller":    {"daemon", "kubectlkruise"},
	"daemon":        {"controller", "webhook", "kubectlkruise"},
	"kubectlkruise": {"controller", "webhook", "daemon"},
}

// imports lists every package of the module with the module's packages its product code (not
// its tests) imports.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = repo.Path(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		var deps []string
		for _, d := range fields[1:] {
			if strings.HasPrefix(d, module) {
				deps = append(deps, strings.TrimPrefix(d, module))
			}
		}
		graph[strings.TrimPrefix(fields[0], module)] = deps
	}
	if len(graph) < 50 {
		t.Fatalf("go list printed %d packages; expected the whole module", len(graph))
	}
	return graph
}

// No arrow points up a tier, and no component imports a part it must not.
func TestTiers(t *testing.T) {
	for pkg, deps := range imports(t) {
		from, ok := placeOf(pkg)
		if !ok {
			continue
		}
		if from.tier < 0 {
			t.Errorf("%s is in no tier: put it under pkg/{process,contract,workload,controller,webhook,daemon,kubectlkruise} (docs/architecture.md)", pkg)
			continue
		}
		for _, dep := range deps {
			to, ok := placeOf(dep)
			if !ok || to.tier < 0 {
				continue
			}
			if to.tier > from.tier {
				t.Errorf("%s (%s tier) imports %s (%s tier, above it)", pkg, tierNames[from.tier], dep, tierNames[to.tier])
			}
			if slices.Contains(forbidden[from.part], to.part) {
				t.Errorf("%s (%s) imports %s (%s)", pkg, from.part, dep, to.part)
			}
		}
	}
}

// The rules themselves: a test that could not fail would prove nothing.
func TestTierRulesCatchWhatTheyForbid(t *testing.T) {
	cases := map[string]struct {
		from, to string
		wantUp   bool
		wantPart bool
	}{
		"engine importing a controller":   {from: "pkg/workload/inplace", to: "pkg/controller/cloneset", wantUp: true},
		"plumbing importing a contract":   {from: "pkg/process/events", to: "pkg/contract/imageref", wantUp: true},
		"webhook importing a controller":  {from: "pkg/webhook/validate", to: "pkg/controller/crr", wantPart: true},
		"daemon importing a webhook":      {from: "pkg/daemon/crrexec", to: "pkg/webhook/server", wantPart: true},
		"controller importing the engine": {from: "pkg/controller/cloneset", to: "pkg/workload/inplace"},
		"the binary importing a webhook":  {from: "pkg/controller", to: "pkg/webhook/validate"},
	}
	for name, c := range cases {
		from, _ := placeOf(c.from)
		to, _ := placeOf(c.to)
		if up := to.tier > from.tier; up != c.wantUp {
			t.Errorf("%s: upward = %v, want %v", name, up, c.wantUp)
		}
		if part := slices.Contains(forbidden[from.part], to.part); part != c.wantPart {
			t.Errorf("%s: forbidden part = %v, want %v", name, part, c.wantPart)
		}
	}
}

var (
	pathRE  = regexp.MustCompile(`(?:pkg|cmd)/[A-Za-z0-9_{},/.-]*`)
	braceRE = regexp.MustCompile(`\{([^{}]*)\}`)
	// a brace list continued on the next line: "{a,b,\n  c}"
	continuedRE = regexp.MustCompile(`,[ \t]*\n[ \t]+`)
)

// mentioned lists the paths text names, braces expanded: "pkg/{a,b/{c,d}}" names pkg/a,
// pkg/b/c and pkg/b/d.
func mentioned(text string) map[string]bool {
	out := map[string]bool{}
	var expand func(string)
	expand = func(s string) {
		loc := braceRE.FindStringSubmatchIndex(s)
		if loc == nil {
			out[strings.TrimRight(s, "/,.")] = true
			return
		}
		for _, alt := range strings.Split(s[loc[2]:loc[3]], ",") {
			expand(s[:loc[0]] + alt + s[loc[1]:])
		}
	}
	for _, m := range pathRE.FindAllString(continuedRE.ReplaceAllString(text, ","), -1) {
		expand(m)
	}
	return out
}

// listed is every package the docs must name: the generated client counts as one.
func listed(t *testing.T) []string {
	var out []string
	for pkg := range imports(t) {
		if _, ok := placeOf(pkg); !ok {
			continue
		}
		if strings.HasPrefix(pkg, "pkg/client/") {
			pkg = "pkg/client"
		}
		if !slices.Contains(out, pkg) {
			out = append(out, pkg)
		}
	}
	slices.Sort(out)
	return out
}

// The README's layout and docs/architecture.md name every package, so a newcomer finds each
// one, and a package added without a line there fails here.
func TestDocsListEveryPackage(t *testing.T) {
	pkgs := listed(t)
	for _, doc := range []string{"README.md", "docs/architecture.md"} {
		raw, err := os.ReadFile(repo.Path(t, strings.Split(doc, "/")...))
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		if doc == "README.md" {
			_, after, ok := strings.Cut(text, "## Layout")
			if !ok {
				t.Fatal("README.md has no ## Layout section")
			}
			text, _, _ = strings.Cut(after, "\n## ")
		}
		names := mentioned(text)
		for _, pkg := range pkgs {
			if !names[pkg] {
				t.Errorf("%s does not list %s", doc, pkg)
			}
		}
		for name := range names {
			if strings.ContainsAny(name, "<*") || name == "pkg" || name == "cmd" {
				continue
			}
			if _, err := os.Stat(repo.Path(t, strings.Split(name, "/")...)); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, name)
			}
		}
	}
}

func TestMentionedExpandsBraces(t *testing.T) {
	got := mentioned("see pkg/{a,b/{c,d}}, and cmd/x.\npkg/y/{e,\n  f}")
	for _, want := range []string{"pkg/a", "pkg/b/c", "pkg/b/d", "cmd/x", "pkg/y/e", "pkg/y/f"} {
		if !got[want] {
			t.Errorf("mentioned misses %s: %v", want, got)
		}
	}
}

// Package names are unique across pkg/ (the generated client and the API versions aside: an API
// version is named by its version in every Kubernetes project, and imported under an alias that
// names its group), so that a reader who meets
// two packages in one file, one page or one stack trace never has to ask which one is meant.
func TestPackageNamesAreUnique(t *testing.T) {
	apiVersion := regexp.MustCompile(`^pkg/apis/[a-z]+/v[0-9]+((alpha|beta)[0-9]+)?$`)
	cmd := exec.Command("go", "list", "-f", "{{.Name}} {{.ImportPath}}", "./pkg/...")
	cmd.Dir = repo.Path(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	byName := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, path, _ := strings.Cut(line, " ")
		if strings.HasPrefix(path, module+"pkg/client/") || apiVersion.MatchString(strings.TrimPrefix(path, module)) {
			continue
		}
		byName[name] = append(byName[name], strings.TrimPrefix(path, module))
	}
	for name, paths := range byName {
		if len(paths) > 1 {
			t.Errorf("package name %s is used by %v: give each a name that says what it is", name, paths)
		}
	}
}
