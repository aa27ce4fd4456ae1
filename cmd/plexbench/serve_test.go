package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"plexbench/internal/shareddata"
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

// TestServeCommand: `plexbench serve` with the default host listens on
// loopback only, takes its API key from the environment, answers the API
// (the model named by its file, owned by plexbench) and stops cleanly
// when its context ends, as on SIGINT or SIGTERM.
func TestServeCommand(t *testing.T) {
	t.Parallel()
	model := shareddata.Path(t, "models", "stories260K-q8_0.gguf")
	stderr := &lineWriter{lines: make(chan string, 1000)}
	c := &cli{stdout: io.Discard, stderr: stderr, getenv: func(k string) string {
		if k == EnvAPIKey {
			return "k3y"
		}
		return ""
	}}
	root := c.rootCmd()
	serveCmd, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if def := serveCmd.Flags().Lookup("host").DefValue; def != "127.0.0.1" {
		t.Errorf("--host defaults to %q", def)
	}
	root.SetArgs(longFlags(root, []string{"serve", "--model", model, "--port", "0", "--queue", "2"}))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	m := nextLine(t, stderr.lines, regexp.MustCompile(`serving (\S+) \(.*\) on http://(\S+): context (\d+) tokens`))
	name, addr := m[1], m[2]
	if name != "stories260K-q8_0" || m[3] != "128" {
		t.Errorf("serving %s with context %s", name, m[3])
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
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve ended with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
	nextLine(t, stderr.lines, regexp.MustCompile(`^plexbench serve: stopped$`))
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
