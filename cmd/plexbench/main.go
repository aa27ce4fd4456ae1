// Command plexbench is a workbench for proving that an inference-engine
// change did not move output quality: perplexity exactly as llama.cpp's
// llama-perplexity computes it, KL divergence against a compact recorded
// base, a live TUI, and TOML profiles for repeatable A/B runs.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"plexbench/internal/outfile"
	"plexbench/kernels"
	"plexbench/results"
)

const usage = `plexbench — perplexity and KL divergence for LLM inference engines

Usage:
  plexbench                      open the TUI on the default profile
  plexbench score [flags]        score a text headless; JSON report on stdout or --perplexity-output
  plexbench tui [--profile P]... live run view; two profiles give an A/B view
  plexbench ab --profile A --profile B | A.json B.json [--json] [--fail-if 'mean_kld>0.001']...
                                 headless A/B: paired ΔPPL ±, B's KLD vs A's base, speed, verdict
  plexbench compare [--pattern GLOB]... [--format table|md|csv|json]
                                 the records under the results root, one table per protocol
  plexbench plot kld-bpw|ppl|kld-hist [--pattern GLOB]... [--record FILE]... [--out F.svg|F.png] [--log-y]
                                 charts of records: KLD vs bits per weight, PPL convergence, KLD histogram
  plexbench card RECORD.json [-o card.md]   a Markdown model card of a record (also: score --card)
  plexbench merge SHARD.json...  combine score --perplexity-shard i/n records into one run's record
  plexbench bases [DIR...] | bases verify FILE | bases gc [--dry-run] [DIR...]   [--json]
                                 the KLD bases under the results root: protocol, model, top-k, windows,
                                 size, which records refer to each; check one whole; remove unreferenced ones
  plexbench worst RECORD.json [-n 20] [--by kld|nll|delta_p] [--windows] [--json]
                                 a record's worst tokens (or windows) with their text
  plexbench floor [--model M] [--against C.gguf]
                                 a model against its own bases: what its KLD figures can resolve
  plexbench noise [--model M] [--json]
                                 the engine's noise floor: threads, pass plans, kernel families against the default run
  plexbench sweep --base F16.gguf [score flags] Q8_0.gguf Q6_K.gguf|GLOB... [--resume] [--plot F.svg] [--cards DIR]
                                 one base, many models against it, one record each, one compare table
  plexbench profile new|show|diff|validate ...
  plexbench inspect MODEL.gguf [--json]
  plexbench tokenize --model M --file TEXT [--ids] [--json]
  plexbench generate --model M --prompt TEXT [-n N]
  plexbench kernels              list kernel variants and what this CPU supports
  plexbench devices              list the GPU runtimes and devices found (CUDA, HIP), or why none

With no --model and no --perplexity, score uses the embedded demo
(stories260K on a TinyStories excerpt). Run 'plexbench CMD -h' for a command's flags.
`

func main() {
	c := &cli{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(c.run(os.Args[1:]))
}

// cli is one invocation of plexbench: where its output goes and the
// environment it reads. Every command is a method on it, so that one
// process can run several side by side (the tests do), each with its own.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// run runs the command args name and returns its exit code.
func (c *cli) run(args []string) int {
	if len(args) == 0 {
		args = []string{"tui"}
	}
	cmd, rest := args[0], args[1:]
	if err := kernels.CPUError(); err != nil && cmd != "help" {
		return c.fail(err)
	}
	switch cmd {
	case "score":
		return c.runScore(rest)
	case "tui":
		return c.runTUI(rest)
	case "ab":
		return c.runAB(rest)
	case "compare":
		return c.runCompare(rest)
	case "plot":
		return c.runPlot(rest)
	case "card":
		return c.runCard(rest)
	case "merge":
		return c.runMerge(rest)
	case "worst":
		return c.runWorst(rest)
	case "floor":
		return c.runFloor(rest)
	case "noise":
		return c.runNoise(rest)
	case "sweep":
		return c.runSweep(rest)
	case "bases":
		return c.runBases(rest)
	case "profile":
		return c.runProfile(rest)
	case "inspect":
		return c.runInspect(rest)
	case "tokenize":
		return c.runTokenize(rest)
	case "generate":
		return c.runGenerate(rest)
	case "kernels":
		return c.runKernels(rest)
	case "devices":
		return c.runDevices(rest)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(c.stdout, usage)
		return 0
	default:
		fmt.Fprintf(c.stderr, "plexbench: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

// fail prints one error line and returns the exit code for it: 2 for
// files refused before any work (outfile.ErrRefused), else 1.
func (c *cli) fail(err error) int {
	fmt.Fprintf(c.stderr, "plexbench: %v\n", err)
	if errors.Is(err, outfile.ErrRefused) {
		return 2
	}
	return 1
}

// newFlags returns a flag set that reports errors instead of exiting, with
// its usage text on stderr.
func (c *cli) newFlags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: plexbench %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// resultsRoot is the results root: flagValue (a --results flag's) when
// given, else $PLEXBENCH_RESULTS, else the default (results.Root).
func (c *cli) resultsRoot(flagValue string) string {
	return results.Root(flagValue, c.getenv(results.EnvRoot))
}

// parseFlags parses args; it returns a non-negative exit code when the
// command should end now (help asked for, or a bad flag).
func parseFlags(fs *flag.FlagSet, args []string) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	return -1
}

// parseInterleaved is parseFlags for commands whose positional arguments
// may come before, between or after flags (`ab A.json B.json --json`).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, int) {
	var pos []string
	for {
		if code := parseFlags(fs, args); code >= 0 {
			return nil, code
		}
		if fs.NArg() == 0 {
			return pos, -1
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// writeJSONLine writes v's JSON encoding, indented, to w.
func writeJSON(w io.Writer, data []byte) error {
	_, err := w.Write(append(data, '\n'))
	return err
}
