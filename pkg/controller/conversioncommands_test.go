package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAnnotations(t *testing.T) {
	got, err := parseAnnotations([]string{"cert-manager.io/inject-ca-from=kruise-system/kruise-webhook-certs", "example.com/expr=a=b", "plain="})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"cert-manager.io/inject-ca-from": "kruise-system/kruise-webhook-certs",
		"example.com/expr":               "a=b",
		"plain":                          "",
	}, got)

	for in, want := range map[string]string{
		"no-value":      `--annotation "no-value": want KEY=VALUE`,
		"bad key!=x":    `--annotation "bad key!=x": bad key! is not an annotation key`,
		"a/b/c=x":       `--annotation "a/b/c=x": a/b/c is not an annotation key`,
		"=value-no-key": `is not an annotation key`,
	} {
		_, err := parseAnnotations([]string{in})
		assert.ErrorContains(t, err, want, in)
	}
}

func TestSetupConversionCommandRefusesBadFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no CRDs":        {[]string{"--annotation=a=b"}, "--crds is required"},
		"bad annotation": {[]string{"--crds=x", "--annotation=a"}, `--annotation "a": want KEY=VALUE`},
		"not a PEM":      {[]string{"--crds=x", "--ca-bundle=hello"}, "--ca-bundle must be a PEM CA certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := NewSetupConversionCommand()
			cmd.SetArgs(tc.args)
			assert.ErrorContains(t, cmd.Execute(), tc.want)
		})
	}
}
