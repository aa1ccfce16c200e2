package apps_test

import (
	"regexp"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// celReservedField matches a field selection of a CEL reserved word (".namespace"). The API
// server names such a property __namespace__ in CEL; 1.34 also takes it unescaped, but 1.30
// refuses the CRD whose rule does ("undefined field 'namespace'"), so the install fails there.
// The escaped form compiles on every release.
var celReservedField = regexp.MustCompile(`\.(as|break|const|continue|else|false|for|function|if|import|in|let|loop|namespace|null|package|return|true|var|void|while)\b`)

func TestCELRulesEscapeReservedFieldNames(t *testing.T) {
	var bad []string
	for name, crd := range readOurCRDs(t) {
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			walkRules(v.Schema.OpenAPIV3Schema, func(rule string) {
				if celReservedField.MatchString(rule) {
					bad = append(bad, name+" "+v.Name+": "+rule)
				}
			})
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("a CEL rule selects a reserved word unescaped (write self.__namespace__, not self.namespace): %s", b)
	}
}

func TestCELReservedFieldPattern(t *testing.T) {
	for rule, want := range map[string]bool{
		"!has(self.namespace) || size(self.namespace) == 0":         true,
		"!has(self.__namespace__) || size(self.__namespace__) == 0": false,
		"has(self.namespaceSelector)":                               false,
		"self.spec.return > 0":                                      true,
		"x in self.items":                                           false,
	} {
		if got := celReservedField.MatchString(rule); got != want {
			t.Errorf("%q: matched %v, want %v", rule, got, want)
		}
	}
}

// walkRules calls f with every x-kubernetes-validations rule of s and the schemas under it.
func walkRules(s *apiextensionsv1.JSONSchemaProps, f func(string)) {
	if s == nil {
		return
	}
	for _, r := range s.XValidations {
		f(r.Rule)
	}
	for k := range s.Properties {
		p := s.Properties[k]
		walkRules(&p, f)
	}
	if s.Items != nil {
		walkRules(s.Items.Schema, f)
		for i := range s.Items.JSONSchemas {
			walkRules(&s.Items.JSONSchemas[i], f)
		}
	}
	if s.AdditionalProperties != nil {
		walkRules(s.AdditionalProperties.Schema, f)
	}
	for _, group := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range group {
			walkRules(&group[i], f)
		}
	}
}
