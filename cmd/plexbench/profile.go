package main

// profile.go owns `plexbench profile`: new, show, diff and validate of TOML
// run profiles.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"plexbench/profiles"
)

const profileUsage = `Usage:
  plexbench profile new NAME [score flags] [--description TEXT] [-o FILE]
  plexbench profile show FILE
  plexbench profile diff A B
  plexbench profile validate FILE...

A profile is a TOML file holding a named run configuration: model, text,
method, ctx and the engine settings, with paths relative to the file.
'new' takes the same setting flags as 'score' (--model, --perplexity,
--perplexity-ctx, --kv-cache-dtype, ...) and writes to stdout unless -o.
--perplexity given more than once makes a corpora list (corpora = ["a.txt",
"b.txt"] in the file): score runs each text on its own and reports each and
their averages. A profile sets text or corpora, not both (an error naming
both keys); other commands score one text and refuse a list.
`

func runProfile(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, profileUsage)
		return 2
	}
	switch args[0] {
	case "new":
		return profileNew(args[1:], os.Stdout)
	case "show":
		return profileShow(args[1:], os.Stdout)
	case "diff":
		return profileDiff(args[1:], os.Stdout)
	case "validate":
		return profileValidate(args[1:], os.Stdout)
	case "help", "-h", "-help", "--help":
		fmt.Print(profileUsage)
		return 0
	}
	fmt.Fprintf(os.Stderr, "plexbench profile: unknown command %q\n\n%s", args[0], profileUsage)
	return 2
}

// profileNew builds a profile from the defaults and the flags given.
func profileNew(args []string, stdout io.Writer) int {
	fs := newFlags("profile new", "NAME [flags] [-o FILE]")
	p := profiles.Default()
	p.BindFlags(fs)
	desc := fs.String("description", "", "what the profile is for")
	out := fs.String("o", "", "write the profile here (default: stdout)")
	// NAME may come before the flags or after them.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
		if code := parseFlags(fs, fs.Args()[1:]); code >= 0 {
			return code
		}
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("profile new: unexpected argument %q", fs.Arg(0)))
	}
	if name == "" {
		return fail(errors.New("profile new: give the profile a NAME"))
	}
	// p holds the defaults and the flags given; its paths are relative to
	// the working directory (no Source), rebased below onto the output's.
	p.Name, p.Description = name, *desc
	if err := p.Validate(); err != nil {
		return fail(fmt.Errorf("profile %s: %w", name, err))
	}
	if *out == "" {
		data, err := p.RelativeTo(".").Encode()
		if err != nil {
			return fail(err)
		}
		stdout.Write(data)
		return 0
	}
	if err := profiles.Save(*out, p.RelativeTo(filepath.Dir(*out))); err != nil {
		return fail(err)
	}
	fmt.Fprintf(os.Stderr, "plexbench: profile %s written to %s\n", name, *out)
	return 0
}

// profileShow prints a profile with every setting, defaults included, and
// where its paths resolve.
func profileShow(args []string, stdout io.Writer) int {
	if len(args) != 1 {
		return fail(errors.New("profile show: give one FILE"))
	}
	p, err := profiles.Load(args[0])
	if err != nil {
		return fail(err)
	}
	data, err := p.Encode()
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "# %s\n", args[0])
	stdout.Write(data)
	r := p.Resolve()
	for _, f := range []struct{ key, path string }{{"model", r.Model}, {"text", r.Text}, {"tokens", r.Tokens}} {
		if f.path != "" {
			fmt.Fprintf(stdout, "# %s resolves to %s%s\n", f.key, f.path, missing(f.path))
		}
	}
	if p.Model == "" {
		fmt.Fprintln(stdout, "# model: the embedded demo model (stories260K)")
	}
	if p.Text == "" && p.Tokens == "" {
		fmt.Fprintln(stdout, "# text: the embedded demo text (TinyStories excerpt)")
	}
	if err := p.Validate(); err != nil {
		fmt.Fprintf(stdout, "# NOT VALID: %v\n", err)
		return 1
	}
	return 0
}

func missing(path string) string {
	if _, err := os.Stat(path); err != nil {
		return " (missing)"
	}
	return ""
}

// profileDiff prints the settings that differ between two profiles.
func profileDiff(args []string, stdout io.Writer) int {
	if len(args) != 2 {
		return fail(errors.New("profile diff: give two files, A and B"))
	}
	a, err := profiles.Load(args[0])
	if err != nil {
		return fail(err)
	}
	b, err := profiles.Load(args[1])
	if err != nil {
		return fail(err)
	}
	d := profiles.Diff(a, b)
	if len(d) == 0 {
		fmt.Fprintf(stdout, "%s and %s run the same settings\n", args[0], args[1])
		return 0
	}
	fmt.Fprintf(stdout, "%-22s %-30s %s\n", "setting", "A "+a.Name, "B "+b.Name)
	for _, c := range d {
		fmt.Fprintf(stdout, "%-22s %-30s %s\n", c.Key, quoteEmpty(c.A), quoteEmpty(c.B))
	}
	return 0
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// profileValidate checks each file: it parses, its settings are valid and
// the files it names exist.
func profileValidate(args []string, stdout io.Writer) int {
	if len(args) == 0 {
		return fail(errors.New("profile validate: give one or more files"))
	}
	code := 0
	for _, path := range args {
		err := validateProfileFile(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "plexbench: %v\n", err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "%s: ok\n", path)
	}
	return code
}

func validateProfileFile(path string) error {
	p, err := profiles.Load(path)
	if err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	r := p.Resolve()
	var errs []error
	for _, f := range []struct{ key, path string }{{"model", r.Model}, {"text", r.Text}, {"tokens", r.Tokens}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.key, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("profile %s: %w", path, errors.Join(errs...))
	}
	return nil
}
