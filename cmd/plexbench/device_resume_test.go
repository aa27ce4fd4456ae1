//go:build linux

package main

// device_resume_test.go: a run journal begun on one backend continued on
// the other (issue 22): a run on the emulated CUDA device stopped by a
// launch fault and resumed on the CPU, and a CPU run killed between
// windows and resumed on the device.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"plexbench/internal/shareddata"
	"plexbench/scoring"
)

// TestResumeAcrossBackends: a 12-window recording run of the F32
// stories260K file begun on one backend and stopped partway (a launch
// fault on the emulated CUDA device; on the CPU, killed between windows)
// continues with --resume on the other: the journal's windows are taken,
// not recomputed (the resumed progress says how many, and a CPU-begun
// run's windows keep the CPU's nll_sum bit for bit), one warning line
// names where the run began and where it continues, the report's config
// is the resuming run's and a warning says where its first windows come
// from, the PPL is an uninterrupted CPU run's within 1e-4 relative, and
// the base recorded across the two gives the CPU a mean KLD below 1e-6.
func TestResumeAcrossBackends(t *testing.T) {
	model := shareddata.Path(t, "models/stories260K-f32.gguf")
	text := shareddata.Path(t, "tinystories/tinystories-16k.txt")
	emulatedDevice(t, nil)
	const windows = 12
	common := []string{"--model", model, "--perplexity", text, "--perplexity-ctx", "64",
		"--perplexity-chunks", fmt.Sprint(windows), "--kv-cache-dtype", "f32", "--kernels", cpuTwin}
	ref := deviceScore(t, common...)
	if ref.WindowsScored != windows {
		t.Fatalf("uninterrupted CPU run: %d windows", ref.WindowsScored)
	}
	for _, c := range []struct{ from, to string }{{"cuda", "cpu"}, {"cpu", "cuda"}} {
		t.Run(c.from+"-to-"+c.to, func(t *testing.T) {
			dir := t.TempDir()
			out, base := filepath.Join(dir, "r.json"), filepath.Join(dir, "b.kld")
			jp := out + ".journal"
			args := append([]string{"score", "--results", dir, "--perplexity-output", out, "--perplexity-kld-base-out", base}, common...)
			if c.from == "cuda" {
				emulatedDevice(t, map[string]string{"PLEXBENCH_EMU_FAIL_LAUNCH": "300"})
				code, _, stderr := runCLI(t, append(args, "--quiet", "--backend", "cuda")...)
				if code == 0 || !strings.Contains(stderr, "LAUNCH_FAILED") {
					t.Fatalf("faulted device run: exit %d, stderr %q", code, stderr)
				}
			} else {
				killBetweenWindows(t, append(args, "--progress", "jsonl", "--backend", "cpu"))
			}
			n, err := scoring.JournalWindows(jp)
			if err != nil || n < 1 || n >= windows {
				t.Fatalf("journal after the stop on %s: %d windows, %v", c.from, n, err)
			}

			emulatedDevice(t, nil) // a working device
			code, _, stderr := runCLI(t, append(args, "--backend", c.to, "--resume")...)
			if code != 0 {
				t.Fatalf("--resume on %s: exit %d, %q", c.to, code, stderr)
			}
			if _, err := os.Stat(jp); err == nil {
				t.Error("the resumed run kept its journal")
			}
			if want := fmt.Sprintf("resumed: %d of %d windows taken from the journal", n, windows); !strings.Contains(stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
			rep := loadReportFile(t, out)
			if rep.Partial || rep.WindowsScored != windows || rep.ScoredTokens != ref.ScoredTokens {
				t.Fatalf("resumed report: partial %v, %d windows, %d tokens", rep.Partial, rep.WindowsScored, rep.ScoredTokens)
			}
			// Where: "cpu", or the backend and its device ("cuda (sm_90)");
			// the faulted device's arch is matched by its prefix.
			begun, on := "cpu", "cpu"
			if c.from == "cuda" {
				begun = "cuda (sm_"
			} else {
				on = fmt.Sprintf("cuda (%s)", rep.Config.DeviceArch)
			}
			var warnings []string
			for line := range strings.SplitSeq(stderr, "\n") {
				if strings.Contains(line, "warning:") {
					warnings = append(warnings, line)
				}
			}
			tail := fmt.Sprintf(" on %s: its first %d of %d windows come from its journal", on, n, windows)
			if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "plexbench: warning: resuming a run begun on "+begun) ||
				!strings.HasSuffix(warnings[0], tail) {
				t.Errorf("warning lines %q: want one, begun on %s…%s", warnings, begun, tail)
			}
			if rel := math.Abs(rep.Perplexity/ref.Perplexity - 1); rel > 1e-4 {
				t.Errorf("PPL %v begun on %s, resumed on %s; %v uninterrupted on the CPU (%.2g relative)", rep.Perplexity, c.from, c.to, ref.Perplexity, rel)
			}
			if cfg := rep.Config; cfg.Backend != c.to || (c.to == "cpu") != (cfg.DeviceArch == "cpu") || (c.to == "cpu") != (len(cfg.DeviceOps) == 0) {
				t.Errorf("config says backend %s, device %s, ops %v: not this run's (%s)", cfg.Backend, cfg.DeviceArch, cfg.DeviceOps, c.to)
			}
			if w := fmt.Sprintf("the first %d of %d windows come from the journal of a run begun on %s", n, windows, begun); !strings.Contains(strings.Join(rep.Warnings, "\n"), w) {
				t.Errorf("report warnings %q do not say %q", rep.Warnings, w)
			}
			if c.from == "cpu" {
				for i := range n {
					if a, b := rep.Windows[i].NLLSum, ref.Windows[i].NLLSum; a != b {
						t.Errorf("window %d, from the CPU's journal: nll_sum %v, the CPU's %v", i, a, b)
					}
				}
			}
			k := deviceScore(t, "--model", model, "--perplexity", text, "--perplexity-kld", base, "--kv-cache-dtype", "f32", "--kernels", cpuTwin).KLD
			if k == nil || !(k.MeanKLD < 1e-6) || k.SameTop != 1 {
				t.Errorf("the CPU against the base recorded on %s then %s: %+v", c.from, c.to, k)
			}
			t.Logf("begun on %s, %d of %d windows journaled, resumed on %s (%s): PPL %.6f (CPU %.6f)",
				c.from, n, windows, c.to, rep.Config.DeviceArch, rep.Perplexity, ref.Perplexity)
		})
	}
}

// killBetweenWindows runs plexbench with args (--progress jsonl: an event
// per window on stderr) in a child process whose stderr is a one-page
// pipe, reads its started event and closes the pipe. Each window is
// journaled before its event is written, and writing one to the closed
// pipe kills the child (SIGPIPE), so it dies between windows; the page
// holds at most five of the ~800-byte window events, so however fast the
// child runs, it journals 1 to 6 windows.
func killBetweenWindows(t *testing.T, args []string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PLEXBENCH_TEST_ARGS="+string(a))
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	br := bufio.NewReaderSize(r, 16) // reads ahead of the started event by at most 15 bytes
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			r.Close()
			cmd.Wait()
			t.Fatalf("the child's stderr ended before its started event: %v", err)
		}
		var e scoring.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Kind == scoring.EventStarted {
			break
		}
	}
	r.Close()
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
		t.Fatalf("child: %v, want it killed by SIGPIPE between windows", err)
	}
}
