package main

// files.go owns each command's set of files for the check every command
// that writes files runs before any work (outfile.Files): every output
// writable and no output the same file as an input or another output,
// else one line naming both flags and exit 2 (cli.fail), nothing written.

import (
	"plexbench/internal/outfile"
	"plexbench/profiles"
	"plexbench/workbench"
)

// checkFiles checks f; code >= 0 ends the command (the refusal said).
func (c *cli) checkFiles(f *outfile.Files) int {
	if err := f.Check(); err != nil {
		return c.fail(err)
	}
	return -1
}

// scoreFiles is what score reads and writes: the job's files (model,
// texts, tokens, task files, bases, report, journal), the profile, the
// card, the progress file and the results root.
func (c *cli) scoreFiles(j workbench.Job, x scoreFlags) *outfile.Files {
	f := j.Files()
	f.In("--profile", x.profile)
	f.Out("--card", x.card)
	f.Out("--progress-out", x.progressOut)
	f.OutDir("--results", c.resultsRoot(x.results))
	return f
}

// profileFiles is what a run of p reads (model, texts, tokens) and the
// profile file it came from.
func profileFiles(p profiles.Profile, profilePath string) *outfile.Files {
	f := workbench.Job{Profile: p}.Files()
	f.In("--profile", profilePath)
	return f
}

// floorFiles is what floor reads and writes.
func floorFiles(p profiles.Profile, profilePath, against, topOut, fullOut, output, root string) *outfile.Files {
	f := profileFiles(p, profilePath)
	f.In("--against", against)
	f.Out("--perplexity-kld-base-out", topOut)
	f.Out("--full-base-out", fullOut)
	f.Out("--perplexity-output", output)
	f.OutDir("--results", root)
	return f
}

// noiseFiles is what noise reads and writes.
func noiseFiles(p profiles.Profile, profilePath, baseOut, root string) *outfile.Files {
	f := profileFiles(p, profilePath)
	f.Out("--perplexity-kld-base-out", baseOut)
	f.OutDir("--results", root)
	return f
}

// sweepFiles is what a sweep reads and writes (sweep, and tui --sweep).
func sweepFiles(sj workbench.SweepJob, x sweepFlags) *outfile.Files {
	f := sj.Files()
	f.In("--profile", x.profile)
	f.Out("--plot", x.plot)
	f.OutDir("--cards", x.cards)
	f.OutDir("--results", sj.Root)
	return f
}

// outputFiles is the files of a command that reads ins (named inFlag)
// and writes out (named outFlag) and, when root is not empty, records
// under it.
func outputFiles(inFlag string, ins []string, outFlag, out, root string) *outfile.Files {
	var f outfile.Files
	f.In(inFlag, ins...)
	f.Out(outFlag, out)
	f.OutDir("--results", root)
	return &f
}
