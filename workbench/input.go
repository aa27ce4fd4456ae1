package workbench

// input.go owns reading a run's input files whole (the text, the token
// ids, a task file): each is refused at once, in one line naming it, when
// it is not a regular file (a FIFO would block, /dev/zero never ends) or
// when reading and parsing it would take more memory than is available.

import (
	"fmt"
	"os"

	"plexbench/internal/outfile"
	"plexbench/internal/sysmem"
	"plexbench/profiles"
)

// inputFactor is the memory a run takes per byte of an input file it reads
// whole, about: the bytes read, the text or parsed values made of them,
// and the token ids and per-token bytes of a tokenized text.
const inputFactor = 8

// readInput reads the input file path whole, what (e.g. "tokenizing")
// saying what is done with it, for the refusal.
func readInput(path, what string) ([]byte, error) {
	st, err := outfile.StatInput(path)
	if err != nil {
		return nil, err
	}
	if err := checkInputSize(path, what, st.Size(), sysmem.Available()); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// checkInputSize refuses an input of size bytes that a cannot hold
// inputFactor times over.
func checkInputSize(path, what string, size int64, a sysmem.Avail) error {
	ask := sysmem.Ask{
		What:  fmt.Sprintf("reading and %s %s of %s", what, path, sysmem.Size(size)),
		Fix:   "give a shorter file",
		Bytes: inputFactor * size,
	}
	return sysmem.Check(a, ask)
}

// checkInputs refuses, before the model loads, an input file of p's that
// is not a regular file, naming its flag. A file not there is left for
// the read to report.
func checkInputs(p profiles.Profile) error {
	check := func(flag, path string) error {
		if path == "" {
			return nil
		}
		if err := outfile.CheckInput(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("%s: %w", flag, err)
		}
		return nil
	}
	for _, text := range append([]string{p.Text}, p.Corpora...) {
		if err := check("--perplexity", text); err != nil {
			return err
		}
	}
	return check("--perplexity-tokens", p.Tokens)
}
