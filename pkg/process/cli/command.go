package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	// Makes --logging-format=json available.
	_ "k8s.io/component-base/logs/json/register"

	"github.com/nodekruise/kruise/pkg/process/features"
	"github.com/nodekruise/kruise/pkg/process/version"
)

// Component describes one binary for NewCommand.
type Component struct {
	// Name is the binary name, e.g. "kruise-daemon".
	Name string
	// Short and Long are the help texts.
	Short, Long string
	// AddFlags registers the component's own flags.
	AddFlags func(fs *pflag.FlagSet)
	// Run runs the component until ctx is cancelled (SIGTERM/SIGINT) or it
	// fails. It is called with logging configured and a logger in ctx.
	Run func(ctx context.Context) error
	// FeatureGate is what --feature-gates sets; nil means
	// features.DefaultMutableFeatureGate, the gate the components read.
	FeatureGate featuregate.MutableFeatureGate
}

// NewCommand returns the cobra command of a component: its flags plus the
// shared logging flags (--logging-format, -v, --vmodule, ...), --feature-gates
// and --version, and the probe subcommand (see newProbeCommand). SIGTERM and
// SIGINT cancel the context given to Run; a second signal terminates the
// process at once.
func NewCommand(c Component) *cobra.Command {
	logOpts := logs.NewOptions()
	var showVersion bool
	gate := c.FeatureGate
	if gate == nil {
		gate = features.DefaultMutableFeatureGate
	}
	gates := features.NewFlag(gate)

	cmd := &cobra.Command{
		Use:           c.Name,
		Short:         c.Short,
		Long:          c.Long,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%s takes no arguments, got %q", c.Name, args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", c.Name, version.Get())
				return err
			}
			if err := logsapi.ValidateAndApply(logOpts, nil); err != nil {
				return fmt.Errorf("invalid logging flags: %w", err)
			}
			ctx, stop := signalContext(context.Background())
			defer stop()
			logger := klog.Background().WithName(c.Name)
			ctx = klog.NewContext(ctx, logger)
			logger.Info("Starting", "version", version.Get().GitVersion, "commit", version.Get().GitCommit,
				"buildDate", version.Get().BuildDate)
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				logger.V(1).Info("Flag", "name", f.Name, "value", f.Value.String())
			})
			gates.Log(logger)
			if err := features.RegisterMetrics(gate); err != nil {
				return &runError{err: err}
			}
			if err := c.Run(ctx); err != nil {
				return &runError{err: err}
			}
			return nil
		},
	}

	fs := cmd.Flags()
	fs.SetNormalizeFunc(flag.WordSepNormalizeFunc)
	fs.BoolVar(&showVersion, "version", false, "Print version information and exit.")
	if c.AddFlags != nil {
		c.AddFlags(fs)
	}
	fs.Var(gates, features.FlagName, gates.Usage())
	logsapi.AddFlags(logOpts, fs)

	// The probe dials the component's default --addr unless told otherwise.
	defaultAddr := ""
	if f := fs.Lookup("addr"); f != nil {
		defaultAddr = f.DefValue
	}
	cmd.AddCommand(newProbeCommand(c.Name, defaultAddr))
	cmd.CompletionOptions.DisableDefaultCmd = true
	return cmd
}

// signalContext is cancelled by the first SIGTERM or SIGINT; after that the
// default signal handling is restored, so a second signal kills the process.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(parent, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// Main runs cmd and returns the process exit code: 0 on success, 1 on error,
// with the error logged (structured) and the logs flushed.
func Main(cmd *cobra.Command) int {
	return run(cmd, os.Stderr)
}

func run(cmd *cobra.Command, stderr io.Writer) int {
	defer logs.FlushLogs()
	executed, err := cmd.ExecuteC()
	if err == nil {
		return 0
	}
	var re *runError
	if errors.As(err, &re) {
		klog.Background().WithName(cmd.Name()).Error(re.err, "Exiting with error")
		return 1
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code // the subcommand has said why
	}
	// Flag and logging-configuration errors happen before logging is set up.
	fmt.Fprintf(stderr, "Error: %v\nRun '%s --help' for usage.\n", err, executed.CommandPath())
	return 1
}

// runError marks an error returned by Component.Run, as opposed to a usage error.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// exitError ends the process with code after a subcommand has written its
// own output.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }
