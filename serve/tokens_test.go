package serve

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// TestTokenEndpoints: /tokenize gives the scoring path's ids (BOS by the
// vocabulary unless add_special_tokens is false, or always with
// TokenizeBOS), the BOS and EOS texts alone as their ids (what
// lm-evaluation-harness's remote tokenizer looks them up by), and what
// lm-eval's auto-detection reads; /detokenize renders ids back; the
// identification routes say plexbench.
func TestTokenEndpoints(t *testing.T) {
	t.Parallel()
	m := loadModel(t, "stories260K-f32.gguf")
	text := "Once upon a time, there was a cat."
	want, _ := m.Tokenize(text)
	for _, bos := range []bool{false, true} {
		_, url := start(t, m, Config{TokenizeBOS: bos})
		tok := func(body map[string]any) []int32 {
			var r struct {
				Tokens      []int32 `json:"tokens"`
				Count       int     `json:"count"`
				MaxModelLen int     `json:"max_model_len"`
			}
			postOK(t, url+"/tokenize", body, &r)
			if r.Count != len(r.Tokens) || r.MaxModelLen != testKV {
				t.Errorf("%v: count %d for %d tokens, max_model_len %d", body, r.Count, len(r.Tokens), r.MaxModelLen)
			}
			return r.Tokens
		}
		plain, noBOS := want, want[1:]
		if bos {
			noBOS = want
		}
		for _, c := range []struct {
			body map[string]any
			want []int32
		}{
			{map[string]any{"prompt": text}, plain},
			{map[string]any{"prompt": text, "add_special_tokens": true}, plain},
			{map[string]any{"prompt": text, "add_special_tokens": false}, noBOS},
			{map[string]any{"prompt": "<s>", "add_special_tokens": false}, []int32{m.Info().BOS}},
			{map[string]any{"prompt": "</s>", "add_special_tokens": false}, []int32{m.Tokenizer().EOS()}},
			{map[string]any{"prompt": "</s>"}, []int32{m.Tokenizer().EOS()}},
		} {
			if got := tok(c.body); !slices.Equal(got, c.want) {
				t.Errorf("TokenizeBOS %v: /tokenize %v: %v, want %v", bos, c.body, got, c.want)
			}
		}
		var d struct {
			Prompt string `json:"prompt"`
		}
		postOK(t, url+"/detokenize", map[string]any{"tokens": want}, &d)
		if d.Prompt != text {
			t.Errorf("/detokenize: %q, want %q", d.Prompt, text)
		}
	}
	_, url := start(t, m, Config{ModelName: "tiny"})
	get := func(path string, v any) {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
	}
	var info map[string]any
	get("/tokenizer_info", &info)
	if info["eos_token"] != "</s>" || info["bos_token"] != "<s>" || info["model_max_length"] != float64(testKV) {
		t.Errorf("/tokenizer_info: %v", info)
	}
	var v versionInfo
	get("/version", &v)
	if v.Server != "plexbench" || v.Model != "tiny" || v.MaxModelLen != testKV || v.VocabSize != 512 ||
		v.TokenizerSHA256 != m.Info().TokenizerSHA256 || !v.AddBOS || v.BOS != 1 || v.MaxLogprobs != DefaultMaxLogprobs {
		t.Errorf("/version: %+v", v)
	}
	var models struct {
		Data []map[string]any `json:"data"`
	}
	get("/v1/models", &models)
	if len(models.Data) != 1 || models.Data[0]["id"] != "tiny" || models.Data[0]["owned_by"] != "plexbench" ||
		models.Data[0]["max_model_len"] != float64(testKV) {
		t.Errorf("/v1/models: %v", models)
	}
	var health map[string]string
	get("/health", &health)
	// Requests naming the served model by its name or its file are taken.
	for _, name := range []string{"tiny", m.Info().Path} {
		var c completion
		postOK(t, url+"/v1/completions", map[string]any{"model": name, "prompt": "Once", "max_tokens": 0}, &c)
	}
}
