package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"plexbench/internal/shareddata"
	"plexbench/internal/testtier"
	"plexbench/scoring"
)

// lineWriter hands each line written to it to a channel: a command's
// stderr read while the command runs.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- string(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// nextLine is the next line matching re, failing after 60 seconds.
func nextLine(t *testing.T, lines <-chan string, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l := <-lines:
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no line matching %v", re)
		}
	}
}

// runningServe is a `plexbench serve` running in process.
type runningServe struct {
	name, addr, context string
	lines               <-chan string
	cancel              func()
	done                chan error
	once                sync.Once
	err                 error
}

// stop ends the command, as SIGINT or SIGTERM does, and returns what it
// returned; it fails the test when the command does not end in a minute.
func (r *runningServe) stop(t *testing.T) error {
	r.once.Do(func() {
		r.cancel()
		select {
		case r.err = <-r.done:
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop")
		}
	})
	return r.err
}

// startServe runs `plexbench serve args...` in process (port 0 unless
// args give one) until the test ends or stop is called, and waits for it
// to listen; getenv is its environment.
func startServe(t *testing.T, getenv func(string) string, args ...string) *runningServe {
	t.Helper()
	stderr := &lineWriter{lines: make(chan string, 1000)}
	c := &cli{stdout: io.Discard, stderr: stderr, getenv: getenv}
	root := c.rootCmd()
	root.SetArgs(longFlags(root, append([]string{"serve", "--port", "0"}, args...)))
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	r := &runningServe{lines: stderr.lines, cancel: stop, done: done}
	t.Cleanup(func() { r.stop(t) })
	m := nextLine(t, stderr.lines, regexp.MustCompile(`serving (\S+) \(.*\) on http://(\S+): context (\d+) tokens`))
	r.name, r.addr, r.context = m[1], m[2], m[3]
	return r
}

// TestServeCommand: `plexbench serve` with the default host listens on
// loopback only, takes its API key from the environment, answers the API
// (the model named by its file, owned by plexbench) and stops cleanly
// when its context ends, as on SIGINT or SIGTERM.
func TestServeCommand(t *testing.T) {
	t.Parallel()
	model := shareddata.Path(t, "models", "stories260K-q8_0.gguf")
	c := &cli{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	serveCmd, _, err := c.rootCmd().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if def := serveCmd.Flags().Lookup("host").DefValue; def != "127.0.0.1" {
		t.Errorf("--host defaults to %q", def)
	}
	srv := startServe(t, func(k string) string {
		if k == EnvAPIKey {
			return "k3y"
		}
		return ""
	}, "--model", model, "--queue", "2")
	name, addr := srv.name, srv.addr
	if name != "stories260K-q8_0" || srv.context != "128" {
		t.Errorf("serving %s with context %s", name, srv.context)
	}
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("listening on %s, not loopback", addr)
	}
	// No other address of this machine reaches it.
	if as, err := net.InterfaceAddrs(); err == nil {
		for _, a := range as {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
				if conn, err := net.DialTimeout("tcp", net.JoinHostPort(ipn.IP.String(), port), time.Second); err == nil {
					conn.Close()
					t.Errorf("reachable on %s", ipn.IP)
				}
			}
		}
	}
	get := func(path, key string) (int, []byte) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	if code, body := get("/v1/models", ""); code != 401 {
		t.Errorf("without the key: %d %s", code, body)
	}
	code, body := get("/v1/models", "k3y")
	var models struct {
		Data []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &models); code != 200 || err != nil || len(models.Data) != 1 ||
		models.Data[0].ID != name || models.Data[0].OwnedBy != "plexbench" {
		t.Errorf("/v1/models: %d %s", code, body)
	}
	if code, body := get("/health", ""); code != 200 {
		t.Errorf("/health: %d %s", code, body)
	}
	if err := srv.stop(t); err != nil {
		t.Errorf("serve ended with %v", err)
	}
	nextLine(t, srv.lines, regexp.MustCompile(`^plexbench serve: stopped$`))
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Errorf("still listening on %s", addr)
	}
}

// TestServeBadFlags: a bad serve command line ends with one line saying
// why, before any model loads.
func TestServeBadFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--port", "70000"}, "--port 70000: want 0..65535"},
		{[]string{"serve", "--queue", "0"}, "take a positive number"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "--model", "/nonexistent.gguf", "--port", "0"}, "/nonexistent.gguf"},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		if code == 0 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line saying %q", c.args, code, stdout, stderr, c.want)
		}
	}
}

// TestScoreAgainstServe: `plexbench serve` on a free loopback port with
// stories260K, and `score --server` against it: the in-process score's
// PPL (to 1e-9 relative) and token hash, for f32 and q8_0; the served
// q8_0's KLD against an in-process f32 base equal to the in-process
// figure to 1e-9, the ids requested by name (the API detected from what
// the server says of itself); the vLLM form (--api vllm, top-k only) a
// KLD at most the exact one, with its overlap.
func TestScoreAgainstServe(t *testing.T) {
	t.Parallel()
	f32 := shareddata.Path(t, "models", "stories260K-f32.gguf")
	q8 := shareddata.Path(t, "models", "stories260K-q8_0.gguf")
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	base := filepath.Join(t.TempDir(), "base.kld")
	common := []string{"--perplexity", text, "--perplexity-ctx", "128", "--perplexity-chunks", "4"}
	score := func(what string, args ...string) scoring.Report {
		t.Helper()
		code, out, stderr := runCLI(t, append(append([]string{"score"}, args...), common...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", what, code, stderr)
		}
		return decodeReport(t, out)
	}
	score("f32 base", "--model", f32, "--perplexity-kld-base-out", base, "--perplexity-kld-top-k", "16")
	for _, model := range []string{f32, q8} {
		srv := startServe(t, func(string) string { return "" }, "--model", model)
		url := "http://" + srv.addr
		var kld []string
		if model == q8 {
			kld = []string{"--perplexity-kld", base}
		}
		want := score("in process", append([]string{"--model", model}, kld...)...)
		got := score("served", append([]string{"--server", url}, kld...)...)
		if got.TokenIDsSHA256 != want.TokenIDsSHA256 || !relClose(got.Perplexity, want.Perplexity) {
			t.Errorf("%s: served PPL %.17g tokens %s, in process %.17g %s", srv.name, got.Perplexity, got.TokenIDsSHA256,
				want.Perplexity, want.TokenIDsSHA256)
		}
		t.Logf("%s: PPL %.17g served, %.17g in process", srv.name, got.Perplexity, want.Perplexity)
		if model != q8 {
			continue
		}
		if got.KLD == nil || want.KLD == nil || got.KLD.Method != scoring.KLDNamedIDs || !relClose(got.KLD.MeanKLD, want.KLD.MeanKLD) {
			t.Fatalf("served KLD %+v, in process %+v: want the named-ids KLD equal", got.KLD, want.KLD)
		}
		vllm := score("served, vLLM form", "--server", url, "--api", "vllm", "--perplexity-kld", base)
		if k := vllm.KLD; k == nil || k.Method != scoring.KLDTopKOverlap || k.TopKOverlap == nil ||
			!(k.MeanKLD <= want.KLD.MeanKLD*(1+1e-12)) {
			t.Errorf("vLLM form KLD %+v: want the top-k-overlap method, at most %.9g, with its overlap", k, want.KLD.MeanKLD)
		} else {
			t.Logf("KLD: named ids %.9g (in process %.9g), top-k overlap %.9g with overlap %.4f",
				got.KLD.MeanKLD, want.KLD.MeanKLD, k.MeanKLD, *k.TopKOverlap)
		}
	}
}

// TestLongServeDevice: `plexbench serve --backend cuda` on the emulated
// CUDA device: score --server against it gives the in-process device
// score's PPL and token hash, and the named-ids KLD against a base equal
// to the in-process device run's, so the served head (its rows grouped by
// the request, not by score's windows) reduces as score's does on a
// device. Long tier: the emulated runs take minutes here; the default
// tier's TestScoreAgainstServe is the same comparison on the CPU.
func TestLongServeDevice(t *testing.T) {
	testtier.SkipUnlessLong(t)
	emulatedDevice(t, nil)
	q8 := shareddata.Path(t, "models", "stories260K-q8_0.gguf")
	f32 := shareddata.Path(t, "models", "stories260K-f32.gguf")
	text := shareddata.Path(t, "tinystories", "tinystories-16k.txt")
	base := filepath.Join(t.TempDir(), "base.kld")
	common := []string{"--perplexity", text, "--perplexity-ctx", "128", "--perplexity-chunks", "4", "--kv-cache-dtype", "f32"}
	deviceScore(t, append([]string{"--model", f32, "--perplexity-kld-base-out", base, "--perplexity-kld-top-k", "16"}, common...)...)
	dev := []string{"--backend", "cuda", "--strict-device-kernels"}
	want := deviceScore(t, append(append([]string{"--model", q8, "--perplexity-kld", base}, dev...), common...)...)
	srv := startServe(t, os.Getenv, append([]string{"--model", q8, "--kv-cache-dtype", "f32"}, dev...)...)
	got := deviceScore(t, append([]string{"--server", "http://" + srv.addr, "--perplexity-kld", base}, common...)...)
	if got.TokenIDsSHA256 != want.TokenIDsSHA256 || !relClose(got.Perplexity, want.Perplexity) {
		t.Errorf("served PPL %.17g tokens %s, in process %.17g %s", got.Perplexity, got.TokenIDsSHA256, want.Perplexity, want.TokenIDsSHA256)
	}
	if got.KLD == nil || want.KLD == nil || got.KLD.Method != scoring.KLDNamedIDs || !relClose(got.KLD.MeanKLD, want.KLD.MeanKLD) {
		t.Errorf("served KLD %+v, in process %+v", got.KLD, want.KLD)
	}
	if got.KLD != nil && want.KLD != nil {
		t.Logf("emulated CUDA: PPL %.17g served, %.17g in process; KLD %.9g served, %.9g in process",
			got.Perplexity, want.Perplexity, got.KLD.MeanKLD, want.KLD.MeanKLD)
	}
}
