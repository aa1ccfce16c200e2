// Package crdfacts writes down what a CRD promises its clients, field by
// field, in a line format that a golden file can hold and a test can diff:
//
//	crd <name> kind=<Kind> scope=<scope> [short=<a,b>]
//	version <name> served=<bool> storage=<bool>
//	<path> <type>[:<format>] [enum=<v1,v2>]     ([] = list item, {} = map value)
//
// Only names, types, formats and enums are recorded: descriptions, bounds
// and validation rules are compared elsewhere (docs/api.md's audit).
package crdfacts

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// CRD is what is recorded of one CRD.
type CRD struct {
	Name     string
	Header   string            // "kind=... scope=... [short=...]"
	Versions map[string]string // version -> "served=... storage=..."
	Fields   map[string][]string
}

// Of records crd.
func Of(crd *apiextensionsv1.CustomResourceDefinition) *CRD {
	header := fmt.Sprintf("kind=%s scope=%s", crd.Spec.Names.Kind, crd.Spec.Scope)
	if len(crd.Spec.Names.ShortNames) > 0 {
		header += " short=" + strings.Join(crd.Spec.Names.ShortNames, ",")
	}
	out := &CRD{Name: crd.Name, Header: header, Versions: map[string]string{}, Fields: map[string][]string{}}
	for _, v := range crd.Spec.Versions {
		out.Versions[v.Name] = fmt.Sprintf("served=%t storage=%t", v.Served, v.Storage)
		var fields []string
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			Flatten(v.Schema.OpenAPIV3Schema, "", &fields)
		}
		slices.Sort(fields)
		out.Fields[v.Name] = fields
	}
	return out
}

// Flatten appends every field of a schema as "path type[:format] [enum=...]"
// (apiVersion, kind and metadata at the top left out).
func Flatten(s *apiextensionsv1.JSONSchemaProps, path string, out *[]string) {
	typ := s.Type
	if s.XIntOrString {
		typ = "int-or-string"
	}
	if s.Format != "" {
		typ += ":" + s.Format
	}
	if path != "" {
		// A schemaless field has no type: its line is the path alone.
		line := strings.TrimSpace(path + " " + typ)
		if len(s.Enum) > 0 {
			vals := make([]string, len(s.Enum))
			for i, e := range s.Enum {
				vals[i] = strings.Trim(string(e.Raw), `"`)
			}
			line += " enum=" + strings.Join(vals, ",")
		}
		*out = append(*out, line)
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	for k, p := range s.Properties {
		if path == "" && (k == "apiVersion" || k == "kind" || k == "metadata") {
			continue
		}
		Flatten(&p, join(k), out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		Flatten(s.Items.Schema, path+"[]", out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		Flatten(s.AdditionalProperties.Schema, path+"{}", out)
	}
}

// Read parses the line format; lines starting with "#" are comments.
func Read(r io.Reader) (map[string]*CRD, error) {
	out := map[string]*CRD{}
	var cur *CRD
	var version string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "crd":
			name, header, _ := strings.Cut(rest, " ")
			cur = &CRD{Name: name, Header: header, Versions: map[string]string{}, Fields: map[string][]string{}}
			out[name] = cur
			version = ""
		case "version":
			if cur == nil {
				return nil, fmt.Errorf("line %d: version before any crd", n)
			}
			var flags string
			version, flags, _ = strings.Cut(rest, " ")
			cur.Versions[version] = flags
			cur.Fields[version] = []string{}
		default:
			if version == "" {
				return nil, fmt.Errorf("line %d: field before any version: %q", n, line)
			}
			cur.Fields[version] = append(cur.Fields[version], line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, c := range out {
		for v := range c.Fields {
			slices.Sort(c.Fields[v])
		}
	}
	return out, nil
}

// Write writes crds in the line format, by name and version.
func Write(w io.Writer, crds map[string]*CRD) error {
	for _, name := range slices.Sorted(maps.Keys(crds)) {
		c := crds[name]
		if _, err := fmt.Fprintf(w, "\ncrd %s %s\n", c.Name, c.Header); err != nil {
			return err
		}
		for _, v := range slices.Sorted(maps.Keys(c.Versions)) {
			if _, err := fmt.Fprintf(w, "version %s %s\n", v, c.Versions[v]); err != nil {
				return err
			}
			for _, f := range c.Fields[v] {
				if _, err := fmt.Fprintln(w, f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Diff returns the lines only in want (missing) and only in got (extra).
func Diff(want, got []string) (missing, extra []string) {
	for _, l := range got {
		if !slices.Contains(want, l) {
			extra = append(extra, l)
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			missing = append(missing, l)
		}
	}
	return missing, extra
}

// WithEnums returns lines with the enum of each field copied from known
// ("path type enum=..." lines) where the line has none and known has the
// same path and type.
func WithEnums(lines, known []string) []string {
	enums := map[string]string{}
	for _, l := range known {
		if field, enum, ok := strings.Cut(l, " enum="); ok {
			enums[field] = enum
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l
		if e, ok := enums[l]; ok {
			out[i] = l + " enum=" + e
		}
	}
	return out
}
