package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// BenchmarkCompletions measures a request in lm-eval's local-completions
// shape (4 prompts of 64 ids, echo, logprobs 1, max_tokens 1) and one in
// vLLM's prompt_logprobs 20 shape, through HTTP and JSON on stories260K:
// the server's own cost beside the engine's.
func BenchmarkCompletions(b *testing.B) {
	m := loadModel(b, "stories260K-f32.gguf")
	_, url := start(b, m, Config{})
	ids, err := m.Tokenize(tinyStories(b, 2000))
	if err != nil {
		b.Fatal(err)
	}
	prompts := [][]int32{ids[:64], ids[64:128], ids[128:192], ids[192:256]}
	for _, c := range []struct {
		name string
		body map[string]any
	}{
		{"lm-eval", map[string]any{"prompt": prompts, "max_tokens": 1, "temperature": 0, "logprobs": 1, "echo": true}},
		{"prompt_logprobs=20", map[string]any{"prompt": prompts, "max_tokens": 0, "prompt_logprobs": 20}},
	} {
		b.Run(c.name, func(b *testing.B) {
			data, _ := json.Marshal(c.body)
			for b.Loop() {
				resp, err := http.Post(url+"/v1/completions", "application/json", bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			b.ReportMetric(float64(b.N*len(prompts)*64)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
