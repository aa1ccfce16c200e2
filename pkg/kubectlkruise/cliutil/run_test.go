package cliutil

import (
	"context"
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

func TestCreate(t *testing.T) {
	var sent []metav1.CreateOptions
	create := func(_ context.Context, s string, o metav1.CreateOptions) (string, error) {
		sent = append(sent, o)
		if s == "bad" {
			return "", errors.New("refused")
		}
		return s + "-created", nil
	}
	got, err := Create(context.Background(), cmdutil.DryRunClient, "x", create)
	assert.NoError(t, err)
	assert.Equal(t, "x", got)
	assert.Empty(t, sent, "a client dry run sends nothing")

	got, err = Create(context.Background(), cmdutil.DryRunServer, "x", create)
	assert.NoError(t, err)
	assert.Equal(t, "x-created", got)
	assert.Equal(t, []metav1.CreateOptions{{DryRun: []string{metav1.DryRunAll}}}, sent)

	got, err = Create(context.Background(), cmdutil.DryRunNone, "bad", create)
	assert.EqualError(t, err, "refused")
	assert.Equal(t, "bad", got, "the object is kept for the caller's message")
}

type steps struct {
	failAt string
	ran    []string
}

func (s *steps) step(name string) error {
	s.ran = append(s.ran, name)
	if s.failAt == name {
		return errors.New(name + " failed")
	}
	return nil
}

func (s *steps) Complete(cmdutil.Factory, *cobra.Command, []string) error { return s.step("complete") }
func (s *steps) Validate() error                                          { return s.step("validate") }
func (s *steps) Run(context.Context) error                                { return s.step("run") }

func TestRunEStopsAtTheFirstError(t *testing.T) {
	for failAt, want := range map[string][]string{
		"":         {"complete", "validate", "run"},
		"complete": {"complete"},
		"validate": {"complete", "validate"},
	} {
		s := &steps{failAt: failAt}
		err := RunE(nil, s)(&cobra.Command{}, nil)
		assert.Equal(t, want, s.ran, failAt)
		assert.Equal(t, failAt != "", err != nil, failAt)
	}
}
