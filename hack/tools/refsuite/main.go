// Command refsuite is the Go half of `make reference-e2e` (hack/reference-e2e.sh): it builds
// OpenKruise's e2e suite from the Go module proxy, and classifies a run's Ginkgo JSON report
// against test/reference/known.yaml.
//
//	refsuite build --dir ~/.cache/kruise/openkruise/v1.9.0 --out .../e2e.test
//	refsuite classify --known test/reference/known.yaml --report report.json
//
// classify prints one line per case (pass, known difference, environment, unexpected failure)
// and the counts, and exits 1 when a case failed unexpectedly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/nodekruise/kruise/test/reference"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	var unexpected errUnexpected
	switch {
	case err == nil:
	case errors.As(err, &unexpected):
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "refsuite:", err)
		os.Exit(2)
	}
}

type errUnexpected int

func (e errUnexpected) Error() string { return fmt.Sprintf("%d unexpected failures", int(e)) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: refsuite build|classify [flags]")
	}
	fs := flag.NewFlagSet("refsuite "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch args[0] {
	case "build":
		dir := fs.String("dir", "", "throwaway module directory (the cache)")
		out := fs.String("out", "", "test binary to write (kept: an existing one is reused)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *dir == "" || *out == "" {
			return errors.New("build needs --dir and --out")
		}
		logf := func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }
		b, err := reference.BuildPackage(ctx, reference.BuildOptions{
			Dir: *dir, Package: reference.E2EPackage, Out: *out, Test: true, Logf: logf,
		})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, b.Bin)
		return nil
	case "classify":
		known := fs.String("known", "test/reference/known.yaml", "classification file")
		report := fs.String("report", "", "Ginkgo JSON report of the run")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		rules, err := reference.LoadRules(*known)
		if err != nil {
			return err
		}
		cases, err := reference.LoadReport(*report)
		if err != nil {
			return err
		}
		res := reference.Classify(cases, rules)
		reference.Print(stdout, res)
		if n := res.Count(reference.Unexpected); n > 0 {
			return errUnexpected(n)
		}
		return nil
	default:
		return fmt.Errorf("unknown command %q: build or classify", args[0])
	}
}
