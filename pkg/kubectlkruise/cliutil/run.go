package cliutil

import (
	"context"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

// Steps are the three steps of a kubectl command: read the flags and arguments, check them,
// act.
type Steps interface {
	Complete(f cmdutil.Factory, cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// RunE runs s's steps in order, stopping at the first error: a command's cobra RunE.
func RunE(f cmdutil.Factory, s Steps) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := s.Complete(f, cmd, args); err != nil {
			return err
		}
		if err := s.Validate(); err != nil {
			return err
		}
		return s.Run(cmd.Context())
	}
}

// Create sends obj with create unless the dry run is the client's, which sends nothing, and
// returns what the server answered: obj itself on a client dry run or an error, so that the
// caller's message can still name it.
func Create[T any](ctx context.Context, strategy cmdutil.DryRunStrategy, obj T,
	create func(context.Context, T, metav1.CreateOptions) (T, error)) (T, error) {
	if strategy == cmdutil.DryRunClient {
		return obj, nil
	}
	created, err := create(ctx, obj, metav1.CreateOptions{DryRun: DryRun(strategy)})
	if err != nil {
		return obj, err
	}
	return created, nil
}
