package inplace

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
)

// changedFields returns the JSON names of the fields of a and b, two values of one struct type,
// that differ semantically (quantities by value, nil and empty alike), in declaration order;
// fields named in skip are left out. Walking the struct rather than a diff of the encoded objects
// lets a refusal name the field a user changed.
func changedFields(a, b any, skip ...string) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() == reflect.Pointer {
		va, vb = va.Elem(), vb.Elem()
	}
	t := va.Type()
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := jsonName(f)
		if contains(skip, name) {
			continue
		}
		if !equality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	return out
}

// jsonName is the name a struct field has on the wire.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" || name == "-" {
		return f.Name
	}
	return name
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
