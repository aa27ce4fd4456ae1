//go:build unix

package main

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"plexbench/engine/gguf"
	"plexbench/engine/synth"
	"plexbench/kernels"
)

// runCLIWithin is runCLI that fails the test, instead of blocking it, when
// the command has not returned within d.
func runCLIWithin(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	c, stdout, stderr := testCLI(t, nil)
	go func() {
		code := c.run(args)
		done <- result{code, stdout.String(), stderr.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(d):
		t.Fatalf("plexbench %s: still running after %v", strings.Join(args, " "), d)
	}
	return 0, "", ""
}

// fileState is what a test compares before and after a run to say that
// an input was left as it was: its mode, and a regular file's content.
func fileState(t *testing.T, path string) string {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Mode().IsRegular() {
		return st.Mode().String()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return st.Mode().String() + string(sum[:])
}

// TestInputsRefused: inputs that cannot be read as files, or that the
// model or machine cannot take, are refused at once: a non-zero exit, one
// line on stderr naming the file or flag (no goroutine dump, no out of
// memory), nothing on stdout, and the inputs as they were.
func TestInputsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "input.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("Once upon a time there was a cat. ", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	short := blockCountModel(t, stories(t, "f32"), 3, filepath.Join(dir, "stories260K-block_count-3.gguf"))
	wide := wideModel(t, filepath.Join(dir, "wide.gguf"))
	f := []string{"--perplexity-ctx", "64", "--perplexity-chunks", "4"}
	cases := []struct {
		name   string
		args   []string
		inputs []string // files that must be left as they were
		want   []string // substrings of the one line on stderr
	}{
		{"FIFO as --model", []string{"--model", fifo, "--perplexity", text}, []string{fifo, text},
			[]string{fifo + ": is a FIFO, not a regular file"}},
		{"FIFO as the text", []string{"--perplexity", fifo}, []string{fifo},
			[]string{"--perplexity: " + fifo + ": is a FIFO, not a regular file"}},
		{"FIFO as a second corpus", []string{"--perplexity", text, "--perplexity", fifo}, []string{fifo, text},
			[]string{"--perplexity: " + fifo + ": is a FIFO, not a regular file"}},
		{"FIFO as the token ids", []string{"--perplexity-tokens", fifo}, []string{fifo},
			[]string{"--perplexity-tokens: " + fifo + ": is a FIFO, not a regular file"}},
		{"FIFO as --perplexity-kld", []string{"--perplexity", text, "--perplexity-kld", fifo}, []string{fifo, text},
			[]string{fifo + ": is a FIFO, not a regular file"}},
		{"FIFO as a task file", []string{"--hellaswag", fifo}, []string{fifo},
			[]string{"--hellaswag: " + fifo + ": is a FIFO, not a regular file"}},
		{"FIFO as --profile", []string{"--profile", fifo}, []string{fifo},
			[]string{"profile " + fifo + ": is a FIFO, not a regular file"}},
		{"/dev/zero as the text", []string{"--perplexity", "/dev/zero"}, nil,
			[]string{"--perplexity: /dev/zero: is a character device, not a regular file"}},
		{"a directory as --model", []string{"--model", dir, "--perplexity", text}, []string{text},
			[]string{dir + ": is a directory, not a regular file"}},
		{"--kv-len of 2^40 tokens", []string{"--kv-len", "1099511627776", "--perplexity", text}, []string{text},
			[]string{"kv_len", "1099511627776"}},
		{"--kv-len the machine cannot hold", []string{"--model", wide, "--kv-len", "4194304", "--kv-cache-dtype", "f32"}, []string{wide},
			[]string{wide, "KV cache of 4194304 positions", "lower --kv-len"}},
		{"block_count 3 of 5 blocks", []string{"--model", short, "--perplexity", text}, []string{short, text},
			[]string{short, "wrong number of tensors; expected 30, got 48: 18 not used by llama (llama.block_count is 3, the file has tensors for 5 blocks): blk.3."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			before := make([]string, len(c.inputs))
			for i, p := range c.inputs {
				before[i] = fileState(t, p)
			}
			code, stdout, stderr := runCLIWithin(t, time.Minute, append(append([]string{"score"}, c.args...), f...)...)
			if code == 0 {
				t.Errorf("exit code 0")
			}
			if stdout != "" {
				t.Errorf("stdout not empty: %.200q", stdout)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "plexbench: ") {
				t.Errorf("stderr %.500q: want one line", stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q\nwant it to contain %q", stderr, w)
				}
			}
			for i, p := range c.inputs {
				if fileState(t, p) != before[i] {
					t.Errorf("%s changed", p)
				}
			}
		})
	}
}

// blockCountModel copies the model at path to out with its block_count
// set to n, every tensor kept.
func blockCountModel(t *testing.T, path string, n uint32, out string) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, kv := range f.KVs {
		w.Set(kv.Key, kv.Value)
	}
	w.Set(f.Architecture()+".block_count", n)
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(ti)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// wideModel writes a small llama whose KV cache takes 32 KiB a position in
// f32: 128 GiB at kv-len 2^22, more than the memory of a test machine and
// than the engine's cap.
func wideModel(t *testing.T, out string) string {
	t.Helper()
	s := synth.Shape{Name: "wide", Arch: "llama", Embd: 64, Heads: 4, KVHeads: 4, HeadDim: 256, FFN: 64, Layers: 4}
	if err := synth.Write(out, synth.Config{Shape: s, Layers: 4, Types: synth.AllOf(kernels.F16), Vocab: synth.PlaceholderVocab(64)}); err != nil {
		t.Fatal(err)
	}
	return out
}
