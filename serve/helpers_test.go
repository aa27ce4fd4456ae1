package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"plexbench/engine"
	"plexbench/internal/shareddata"
)

// testKV is the KV cache of the test models: stories260K's training
// context.
const testKV = 128

// loadModel loads a stories260K model of the shared data, closed when t
// ends. Each test loads its own: an engine runs one pass at a time.
func loadModel(t testing.TB, name string) *engine.Model {
	t.Helper()
	m, err := engine.Load(shareddata.Path(t, "models", name), engine.Options{KVLen: testKV, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// start serves eng on a loopback port for the test's life; it returns the
// server and its base URL.
func start(t testing.TB, eng Engine, cfg Config) (*Server, string) {
	t.Helper()
	srv, err := New(eng, cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

// post sends body (JSON-encoded unless it is a string) and returns the
// status and the response body.
func post(t testing.TB, url string, body any) (int, []byte) {
	t.Helper()
	data, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		data = string(b)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader([]byte(data)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// postOK is post expecting 200, decoding the response into v.
func postOK(t testing.TB, url string, body, v any) {
	t.Helper()
	code, out := post(t, url, body)
	if code != http.StatusOK {
		t.Fatalf("POST %s: %d %s", url, code, out)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("POST %s: %v in %s", url, err, out)
	}
}

// completion is the part of a /v1/completions response the tests read.
type completion struct {
	Choices []struct {
		Index    int    `json:"index"`
		Text     string `json:"text"`
		Logprobs *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []*float64           `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			TextOffset    []int                `json:"text_offset"`
		} `json:"logprobs"`
		PromptLogprobs []map[string]struct {
			Logprob      float64 `json:"logprob"`
			Rank         int     `json:"rank"`
			DecodedToken string  `json:"decoded_token"`
		} `json:"prompt_logprobs"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// tinyStories is the first n bytes of the TinyStories validation text.
func tinyStories(t testing.TB, n int) string {
	t.Helper()
	data, err := os.ReadFile(shareddata.Path(t, "tinystories", "tinystories_val.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data[:min(n, len(data))])
}

// gated is an engine whose prefills wait until release is closed (or
// their context ends), announcing each on started: a request held
// running for as long as a test needs.
type gated struct {
	*engine.Model
	started chan struct{}
	release chan struct{}
}

func newGated(m *engine.Model) *gated {
	return &gated{Model: m, started: make(chan struct{}, 1024), release: make(chan struct{})}
}

func (g *gated) Prefill(ctx context.Context, tokens []int32, from int, emit func(int, []float32, int) error) error {
	g.started <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Model.Prefill(ctx, tokens, from, emit)
}
