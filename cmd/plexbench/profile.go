package main

// profile.go owns `plexbench profile`: new, show, diff and validate of TOML
// run profiles.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"plexbench/internal/outfile"
	"plexbench/profiles"
)

const profileAbout = `A profile is a TOML file holding a named run configuration: model, text,
method, ctx and the engine settings, with paths relative to the file.
'new' takes the same setting flags as 'score' (--model, --perplexity,
--perplexity-ctx, --kv-cache-dtype, ...) and writes to stdout unless -o.
--perplexity given more than once makes a corpora list (corpora = ["a.txt",
"b.txt"] in the file): score runs each text on its own and reports each and
their averages. A profile sets text or corpora, not both (an error naming
both keys); other commands score one text and refuse a list.`

func (c *cli) profileCmd() *cobra.Command {
	cmd, _ := c.command("profile", "new|show|diff|validate ...", "TOML run profiles: new, show, diff, validate")
	cmd.Long = profileAbout
	cmd.AddCommand(c.profileNewCmd())
	for _, sub := range []struct {
		use, short string
		run        func([]string) int
	}{
		{"show FILE", "print a profile with every setting, defaults filled in", c.profileShow},
		{"diff A B", "the settings two profiles differ in", c.profileDiff},
		{"validate FILE...", "check profiles: each parses and its settings are valid", c.profileValidate},
	} {
		name, synopsis, _ := strings.Cut(sub.use, " ")
		sc, _ := c.command(name, synopsis, sub.short)
		cmd.AddCommand(c.action(sc, sub.run))
	}
	return c.action(cmd, func(pos []string) int {
		if len(pos) == 0 {
			cmd.SetOut(c.stderr)
			cmd.Help()
			return 2
		}
		return c.unknownCommand(cmd, pos[0])
	})
}

// profileNewCmd builds a profile from the defaults and the flags given.
func (c *cli) profileNewCmd() *cobra.Command {
	cmd, fs := c.command("new", "NAME [flags] [-o FILE]", "write a profile of the defaults and the setting flags given")
	p := profiles.Default()
	p.BindFlags(fs)
	desc := fs.String("description", "", "what the profile is for")
	out := fs.StringP("output", "o", "", "write the profile here (default: stdout)")
	return c.action(cmd, func(pos []string) int {
		var name string
		if len(pos) > 0 {
			name = pos[0]
		}
		if len(pos) > 1 {
			return c.fail(fmt.Errorf("profile new: unexpected argument %q", pos[1]))
		}
		if name == "" {
			return c.fail(errors.New("profile new: give the profile a NAME"))
		}
		// p holds the defaults and the flags given; its paths are relative to
		// the working directory (no Source), rebased below onto the output's.
		p.Name, p.Description = name, *desc
		if err := p.Validate(); err != nil {
			return c.fail(fmt.Errorf("profile %s: %w", name, err))
		}
		f := profileFiles(p, "")
		f.Out("-o", *out)
		if code := c.checkFiles(f); code >= 0 {
			return code
		}
		if *out == "" {
			data, err := p.RelativeTo(".").Encode()
			if err != nil {
				return c.fail(err)
			}
			c.stdout.Write(data)
			return 0
		}
		if err := c.saveProfile(*out, p.RelativeTo(filepath.Dir(*out))); err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(c.stderr, "plexbench: profile %s written to %s\n", name, *out)
		return 0
	})
}

// saveProfile is profiles.Save with "-" this command's stdout, not the
// process's.
func (c *cli) saveProfile(path string, p profiles.Profile) error {
	if path != outfile.Stdout {
		return profiles.Save(path, p)
	}
	data, err := p.Encode()
	if err != nil {
		return err
	}
	return outfile.WriteFileTo(path, data, c.stdout)
}

// profileShow prints a profile with every setting, defaults included, and
// where its paths resolve.
func (c *cli) profileShow(args []string) int {
	if len(args) != 1 {
		return c.fail(errors.New("profile show: give one FILE"))
	}
	p, err := profiles.Load(args[0])
	if err != nil {
		return c.fail(err)
	}
	data, err := p.Encode()
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(c.stdout, "# %s\n", args[0])
	c.stdout.Write(data)
	r := p.Resolve()
	for _, f := range []struct{ key, path string }{{"model", r.Model}, {"text", r.Text}, {"tokens", r.Tokens}} {
		if f.path != "" {
			fmt.Fprintf(c.stdout, "# %s resolves to %s%s\n", f.key, f.path, missing(f.path))
		}
	}
	if p.Model == "" {
		fmt.Fprintln(c.stdout, "# model: the embedded demo model (stories260K)")
	}
	if p.Text == "" && p.Tokens == "" {
		fmt.Fprintln(c.stdout, "# text: the embedded demo text (TinyStories excerpt)")
	}
	if err := p.Validate(); err != nil {
		fmt.Fprintf(c.stdout, "# NOT VALID: %v\n", err)
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
func (c *cli) profileDiff(args []string) int {
	if len(args) != 2 {
		return c.fail(errors.New("profile diff: give two files, A and B"))
	}
	a, err := profiles.Load(args[0])
	if err != nil {
		return c.fail(err)
	}
	b, err := profiles.Load(args[1])
	if err != nil {
		return c.fail(err)
	}
	d := profiles.Diff(a, b)
	if len(d) == 0 {
		fmt.Fprintf(c.stdout, "%s and %s run the same settings\n", args[0], args[1])
		return 0
	}
	fmt.Fprintf(c.stdout, "%-22s %-30s %s\n", "setting", "A "+a.Name, "B "+b.Name)
	for _, ch := range d {
		fmt.Fprintf(c.stdout, "%-22s %-30s %s\n", ch.Key, quoteEmpty(ch.A), quoteEmpty(ch.B))
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
func (c *cli) profileValidate(args []string) int {
	if len(args) == 0 {
		return c.fail(errors.New("profile validate: give one or more files"))
	}
	code := 0
	for _, path := range args {
		err := validateProfileFile(path)
		if err != nil {
			fmt.Fprintf(c.stderr, "plexbench: %v\n", err)
			code = 1
			continue
		}
		fmt.Fprintf(c.stdout, "%s: ok\n", path)
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
