package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"plexbench/internal/shareddata"
	"plexbench/results"
	"plexbench/scoring"
)

// TestMain lets a test re-run this binary as plexbench itself: with
// PLEXBENCH_TEST_ARGS (a JSON array) set, the process is the command.
// child is plexbench running in a child process; done closes when it ends.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startChild starts plexbench with args in a child process, with a fresh
// results root of its own.
func startChild(t *testing.T, args []string) *child {
	t.Helper()
	a, _ := json.Marshal(args)
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^$"), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), results.EnvRoot+"="+t.TempDir(), "PLEXBENCH_TEST_ARGS="+string(a))
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.cmd.Process.Kill(); <-c.done })
	return c
}

// waitJournal waits until the journal at path holds at least n windows;
// false when the child ended first.
func (c *child) waitJournal(t *testing.T, path string, n int) bool {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if got, err := scoring.JournalWindows(path); err == nil && got >= n {
			return true
		}
		select {
		case <-c.done:
			return false
		case <-deadline:
			t.Fatalf("journal %s never reached %d windows", path, n)
		case <-time.After(time.Millisecond):
		}
	}
}

// signal sends sigs and waits for the child to end.
func (c *child) signal(sigs ...syscall.Signal) {
	for _, s := range sigs {
		c.cmd.Process.Signal(s)
	}
	<-c.done
}

// resumeArgs is a 20-window stories260K run recording a base, its report
// and base in dir.
func resumeArgs(t *testing.T, dir string) []string {
	return []string{"score", "--model", shareddata.Path(t, "models", "stories260K-q8_0.gguf"),
		"--perplexity", shareddata.Path(t, "tinystories", "tinystories-16k.txt"),
		"--perplexity-ctx", "256", "--perplexity-chunks", "20", "--threads", "1", "--quiet",
		"--perplexity-output", filepath.Join(dir, "r.json"), "--perplexity-kld-base-out", filepath.Join(dir, "b.kld")}
}

func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("left %s", e.Name())
		}
	}
}

// withoutTimings is r's JSON with its timings (and its record's) cleared:
// what two runs of the same thing share.
func withoutTimings(r scoring.Report) string {
	r.ElapsedSeconds, r.PrefillTokensPerSecond, r.ProgressHeldSeconds = 0, 0, 0
	for i := range r.Windows {
		r.Windows[i].Seconds = 0
	}
	if r.Record != nil {
		rec := *r.Record
		rec.Started, rec.Finished, rec.WallSeconds = time.Time{}, time.Time{}, 0
		r.Record = &rec
	}
	b, _ := r.JSON()
	return string(b)
}

func loadReportFile(t *testing.T, path string) scoring.Report {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep scoring.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestResumeAfterSIGKILL kills a recording run with SIGKILL at a random
// window, resumes it, and checks the report and the base against an
// uninterrupted run's: token hash, every window's nll_sum, every base row,
// and the files byte for byte, timings aside.
func TestResumeAfterSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := resumeArgs(t, dir)
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("uninterrupted run: %s", stderr)
	}
	rp, bp, jp := filepath.Join(dir, "r.json"), filepath.Join(dir, "b.kld"), filepath.Join(dir, "r.json.journal")
	if _, err := os.Stat(jp); err == nil {
		t.Fatal("a complete run kept its journal")
	}
	os.Rename(rp, rp+".ref")
	os.Rename(bp, bp+".ref")

	kill := 1 + rand.IntN(18)
	t.Logf("SIGKILL once the journal holds %d windows", kill)
	child := startChild(t, args)
	if !child.waitJournal(t, jp, kill) {
		t.Fatalf("the child ended before window %d", kill)
	}
	child.signal(syscall.SIGKILL)
	n, err := scoring.JournalWindows(jp)
	if err != nil || n < kill || n >= 20 {
		t.Fatalf("journal after the kill: %d windows, %v", n, err)
	}
	if _, err := os.Stat(rp); err == nil {
		t.Fatal("the killed run wrote a report")
	}
	t.Logf("killed with %d windows journaled", n)

	// Another model file or engine config is refused, naming the field.
	other := slices.Clone(args)
	other[2] = shareddata.Path(t, "models", "stories260K-f32.gguf")
	for _, c := range []struct {
		args []string
		want string
	}{
		{other, "model.head_sha256 is"},
		{append(slices.Clone(args), "--kv-cache-dtype", "f32"), `config.kv_cache_dtype is "f16" in the journal, "f32" in this run`},
		{args, "continue it with --resume"},
	} {
		a := c.args
		if c.want != "continue it with --resume" {
			a = append(a, "--resume")
		}
		code, _, stderr := runCLI(t, a...)
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); code == 0 || len(lines) != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("exit %d, stderr %q: want one line with %q", code, stderr, c.want)
		}
	}

	if code, _, stderr := runCLI(t, append(args, "--resume")...); code != 0 {
		t.Fatalf("resumed run: %s", stderr)
	}
	noTemps(t, dir)
	if _, err := os.Stat(jp); err == nil {
		t.Error("the resumed run kept its journal")
	}

	got, want := loadReportFile(t, rp), loadReportFile(t, rp+".ref")
	if got.TokenIDsSHA256 != want.TokenIDsSHA256 || len(got.Windows) != 20 || len(want.Windows) != 20 {
		t.Fatalf("token hash %s vs %s, windows %d vs %d", got.TokenIDsSHA256, want.TokenIDsSHA256, len(got.Windows), len(want.Windows))
	}
	for i := range got.Windows {
		if got.Windows[i].NLLSum != want.Windows[i].NLLSum {
			t.Errorf("window %d: nll_sum %v, uninterrupted %v", i, got.Windows[i].NLLSum, want.Windows[i].NLLSum)
		}
	}
	if a, b := withoutTimings(got), withoutTimings(want); a != b {
		t.Errorf("reports differ beyond timings:\n%s\nvs\n%s", a, b)
	}

	ga, _ := os.ReadFile(bp)
	wa, _ := os.ReadFile(bp + ".ref")
	if !bytes.Equal(ga, wa) {
		t.Errorf("bases differ: %d vs %d bytes", len(ga), len(wa))
	}
	rb, err := scoring.OpenBase(bp)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	wb, err := scoring.OpenBase(bp + ".ref")
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	k := rb.Header.TopK
	ids1, ids2 := make([]int32, k), make([]int32, k)
	lp1, lp2 := make([]float32, k), make([]float32, k)
	for i := range wb.Header.Scored {
		n1, err1 := rb.Next(ids1, lp1)
		n2, err2 := wb.Next(ids2, lp2)
		if err1 != nil || err2 != nil || n1 != n2 || !slices.Equal(ids1, ids2) || !slices.Equal(lp1, lp2) {
			t.Fatalf("base row %d differs (%v %v)", i, err1, err2)
		}
	}
}

// TestSignalsLeaveNoTemps: SIGINT or SIGTERM to a recording run stops it
// after the window in flight with a partial report, a partial base and the
// journal, and no temporary file; two signals in a row end it at once,
// with no temporary file either.
func TestSignalsLeaveNoTemps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		sigs  []syscall.Signal
		twice bool
	}{
		{"SIGINT", []syscall.Signal{syscall.SIGINT}, false},
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, false},
		{"SIGINT twice", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, true},
		{"SIGTERM twice", []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			child := startChild(t, resumeArgs(t, dir))
			jp := filepath.Join(dir, "r.json.journal")
			if !child.waitJournal(t, jp, 2) {
				t.Fatal("the child ended before window 2")
			}
			child.signal(c.sigs...)
			if code := child.cmd.ProcessState.ExitCode(); code != 130 {
				t.Errorf("exit code %d, want 130", code)
			}
			noTemps(t, dir)
			if c.twice {
				return // ended at once or after the window: both are fine
			}
			rep := loadReportFile(t, filepath.Join(dir, "r.json"))
			if !rep.Partial || rep.KLDBaseOut == "" {
				t.Errorf("report: partial %v, base %q (%s)", rep.Partial, rep.KLDBaseOut, rep.PartialReason)
			}
			b, err := scoring.OpenBase(filepath.Join(dir, "b.kld"))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if !b.Header.Partial() || b.Header.Windows != rep.WindowsScored {
				t.Errorf("base holds %d windows (partial %v), the report %d", b.Header.Windows, b.Header.Partial(), rep.WindowsScored)
			}
			if _, err := os.Stat(jp); err != nil {
				t.Errorf("journal: %v", err)
			}
		})
	}
}
