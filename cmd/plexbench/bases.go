package main

// bases.go owns `plexbench bases`: the KLD bases under the results root
// and any folders given, with what refers to each (results.FindBases);
// `bases verify FILE`, a whole base checked record by record; and `bases
// gc`, removing the bases nothing refers to.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"plexbench/internal/filelock"
	"plexbench/internal/sysmem"
	"plexbench/results"
	"plexbench/scoring"
)

// baseRow is one base as `bases` lists it and --json prints it.
type baseRow struct {
	Path           string            `json:"path"`
	Format         string            `json:"format,omitempty"`
	Identity       string            `json:"identity,omitempty"`
	Method         string            `json:"method,omitempty"`
	Ctx            int               `json:"ctx,omitempty"`
	Stride         int               `json:"stride,omitempty"`
	ChunkLimit     int               `json:"chunk_limit,omitempty"`
	Model          string            `json:"model,omitempty"`
	TopK           int               `json:"top_k,omitempty"` // a llama.cpp base: the vocabulary
	Windows        int               `json:"windows"`
	WindowsPlanned int               `json:"windows_planned,omitempty"`
	Partial        bool              `json:"partial"`
	Tokens         int               `json:"tokens"`
	Scored         int               `json:"scored_tokens"`
	TokenIDsSHA256 string            `json:"token_ids_sha256,omitempty"`
	Size           int64             `json:"size"`
	Refs           []results.BaseRef `json:"referenced_by"`
	Error          string            `json:"error,omitempty"`
}

func newBaseRow(bi scoring.BaseInfo, refs []results.BaseRef, err error) baseRow {
	h := &bi.Header
	r := baseRow{Path: bi.Path, Format: bi.Format, Identity: bi.ID.Identity, Method: h.Method, Ctx: h.Ctx,
		Stride: h.Stride, ChunkLimit: h.ChunkLimit, Model: h.Meta.ModelFile, TopK: h.TopK, Windows: h.Windows,
		WindowsPlanned: h.Meta.WindowsPlanned, Partial: h.Partial(), Tokens: h.Tokens, Scored: h.Scored,
		Size: bi.Size, Refs: refs}
	if r.Refs == nil {
		r.Refs = []results.BaseRef{}
	}
	if h.Tokens > 0 {
		r.TokenIDsSHA256 = h.TokenHash()
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

func (c *cli) basesCmd() *cobra.Command {
	cmd, b := c.newBasesCmd("bases", "[verify FILE | gc [--dry-run]] [--results DIR] [--json] [DIR...]",
		"the KLD bases under the results root: protocol, model, top-k, windows, size, which records refer to each",
		"listed from", "print the list as JSON on stdout")
	cmd.AddCommand(c.basesVerifyCmd(), c.basesGCCmd())
	return c.action(cmd, func(dirs []string) int {
		ents, code := b.find(dirs)
		if code >= 0 {
			return code
		}
		rows := make([]baseRow, len(ents))
		for i, e := range ents {
			rows[i] = newBaseRow(e.Info, e.Refs, e.Err)
		}
		if *b.asJSON {
			return c.printJSON(struct {
				Object string    `json:"object"`
				Bases  []baseRow `json:"bases"`
			}{"plexbench.bases", rows})
		}
		writeBasesTable(c.stdout, rows)
		return 0
	})
}

// basesCmd holds the flags `bases` and `bases gc` share: the results root
// and --json; the folders to search are the arguments.
type basesFlags struct {
	cli        *cli
	resultsDir *string
	asJSON     *bool
}

// newBasesCmd makes a bases command that finds bases and its flags; from
// says what the command does with them ("listed from").
func (c *cli) newBasesCmd(name, synopsis, short, from, jsonUsage string) (*cobra.Command, basesFlags) {
	cmd, fs := c.command(name, synopsis, short)
	return cmd, basesFlags{c, fs.String("results", "", resultsUsage("the bases are "+from)), fs.Bool("json", false, jsonUsage)}
}

// find lists the bases in the results root and the folders dirs name;
// code is non-negative when the command is to exit.
func (b basesFlags) find(dirs []string) (_ []results.BaseEntry, code int) {
	c := b.cli
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil {
			return nil, c.fail(fmt.Errorf("bases: %w", err))
		} else if !st.IsDir() {
			return nil, c.fail(fmt.Errorf("bases: %s is not a folder (bases verify FILE checks one base)", d))
		}
	}
	ents, err := results.FindBases(append([]string{c.resultsRoot(*b.resultsDir)}, dirs...))
	if err != nil {
		return nil, c.fail(err)
	}
	return ents, -1
}

func (c *cli) printJSON(v any) int {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return c.fail(err)
	}
	if err := writeJSON(c.stdout, data); err != nil {
		return c.fail(err)
	}
	return 0
}

func writeBasesTable(w io.Writer, rows []baseRow) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no KLD bases found")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BASE\tFORMAT\tPROTOCOL\tMODEL\tTOP-K\tWINDOWS\tSIZE\tREFERENCED BY")
	for _, r := range rows {
		if r.Error != "" {
			why := strings.TrimPrefix(r.Error, scoring.ErrBadBase.Error()+" "+r.Path+": ")
			fmt.Fprintf(tw, "%s\t%s\tunreadable: %s\t\t\t\t%s\t\n", r.Path, r.Format, why, sysmem.Size(r.Size))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Path, r.Format, protocolText(&r), orDash(r.Model),
			r.TopK, windowsText(&r), sysmem.Size(r.Size), refsText(r.Refs))
	}
	tw.Flush()
}

func protocolText(r *baseRow) string {
	s := fmt.Sprintf("%s, ctx %d", r.Method, r.Ctx)
	if r.Method == scoring.MethodSliding {
		s += fmt.Sprintf(", stride %d", r.Stride)
	}
	if r.ChunkLimit > 0 && r.Format == scoring.BaseFormatPlexbench {
		s += fmt.Sprintf(", first %d", r.ChunkLimit)
	}
	return s + fmt.Sprintf(", tokens %.12s…", r.TokenIDsSHA256)
}

func windowsText(r *baseRow) string {
	if r.Partial {
		return fmt.Sprintf("%d of %d (partial)", r.Windows, r.WindowsPlanned)
	}
	return fmt.Sprintf("%d (complete)", r.Windows)
}

func refsText(refs []results.BaseRef) string {
	if len(refs) == 0 {
		return "nothing"
	}
	var parts []string
	for _, ref := range refs {
		s := ref.Role + " " + filepath.Base(ref.Path)
		if ref.Partial {
			s += " (stopped)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func (c *cli) basesVerifyCmd() *cobra.Command {
	cmd, fs := c.command("verify", "FILE [--json]", "check one base file whole")
	asJSON := fs.Bool("json", false, "print what was checked as JSON on stdout")
	return c.action(cmd, func(pos []string) int {
		if len(pos) != 1 {
			return c.fail(errors.New("bases verify: give one base file"))
		}
		bi, err := scoring.VerifyBase(pos[0])
		if err != nil {
			return c.fail(err)
		}
		r := newBaseRow(bi, nil, nil)
		if *asJSON {
			return c.printJSON(struct {
				Object string `json:"object"`
				OK     bool   `json:"ok"`
				baseRow
			}{"plexbench.base_verify", true, r})
		}
		fmt.Fprintf(c.stdout, "%s: ok\n  format     %s, identity %s\n  protocol   %s\n  model      %s\n", r.Path, r.Format, r.Identity,
			protocolText(&r), orDash(r.Model))
		fmt.Fprintf(c.stdout, "  counts     %d tokens, %d windows %s, %d scored tokens, top-k %d\n", r.Tokens, r.Windows,
			strings.TrimPrefix(windowsText(&r), fmt.Sprint(r.Windows)+" "), r.Scored, r.TopK)
		fmt.Fprintf(c.stdout, "  token ids  sha256 %s (matches the ids it holds)\n  size       %d bytes (%s), every record checked\n",
			r.TokenIDsSHA256, r.Size, sysmem.Size(r.Size))
		return 0
	})
}

func (c *cli) basesGCCmd() *cobra.Command {
	cmd, b := c.newBasesCmd("gc", "[--dry-run] [--results DIR] [--json] [DIR...]", "remove the bases no record refers to",
		"collected from", "print the bases removed (or to remove) as JSON on stdout")
	dryRun := cmd.Flags().Bool("dry-run", false, "list the bases nothing refers to, remove none")
	return c.action(cmd, func(dirs []string) int {
		ents, code := b.find(dirs)
		if code >= 0 {
			return code
		}
		var gone, inUse []string
		var bytes int64
		skipped := 0
		for _, e := range ents {
			if e.Err != nil {
				skipped++
			}
			if !e.Unreferenced() {
				continue
			}
			if err := results.RemoveBase(e.Info.Path, *dryRun); errors.Is(err, filelock.ErrInUse) {
				inUse = append(inUse, err.Error())
				continue
			} else if err != nil {
				return c.fail(fmt.Errorf("bases gc: %w", err))
			}
			gone, bytes = append(gone, e.Info.Path), bytes+e.Info.Size
		}
		verb := "removed"
		if *dryRun {
			verb = "would remove"
		}
		fmt.Fprintf(c.stderr, "plexbench: bases gc: %s %d of %d bases (%s)", verb, len(gone), len(ents), sysmem.Size(bytes))
		if skipped > 0 {
			fmt.Fprintf(c.stderr, "; %d unreadable left alone (bases verify says why)", skipped)
		}
		if len(inUse) > 0 {
			fmt.Fprintf(c.stderr, "; %d in use left alone (%s)", len(inUse), strings.Join(inUse, ", "))
		}
		fmt.Fprintln(c.stderr)
		if *b.asJSON {
			return c.printJSON(struct {
				Object  string   `json:"object"`
				DryRun  bool     `json:"dry_run"`
				Removed []string `json:"removed"`
				Bytes   int64    `json:"bytes"`
				InUse   []string `json:"in_use,omitempty"`
			}{"plexbench.bases_gc", *dryRun, append([]string{}, gone...), bytes, inUse})
		}
		for _, p := range gone {
			fmt.Fprintln(c.stdout, p)
		}
		return 0
	})
}
