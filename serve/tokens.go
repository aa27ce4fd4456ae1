package serve

// tokens.go owns the endpoints that need no engine pass: /tokenize and
// /detokenize in vLLM's shapes, /tokenizer_info (what
// lm-evaluation-harness's remote tokenizer reads), /v1/models,
// SGLang's /get_model_info, /version (what a client reads to know it
// talks to plexbench) and /health.

import (
	"encoding/json"
	"net/http"
	"runtime"
)

type tokenizeRequest struct {
	Model            string  `json:"model"`
	Prompt           *string `json:"prompt"`
	AddSpecialTokens *bool   `json:"add_special_tokens"`
	ReturnTokenStrs  bool    `json:"return_token_strs"`
	Messages         any     `json:"messages"`
}

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int32  `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

// tokenize is vLLM's /tokenize: a text's ids as a text prompt gets them
// (BOS when the vocabulary asks and add_special_tokens, default true, or
// Config.TokenizeBOS; special-token texts not parsed). One exception: a
// prompt that is exactly the BOS or EOS token's text is that token alone,
// so that a client that finds those ids by tokenizing their texts
// (lm-evaluation-harness's remote tokenizer) finds them.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) *apiError {
	release, e := s.admitLight()
	if e != nil {
		return e
	}
	defer release()
	var req tokenizeRequest
	if e := s.decode(w, r, &req); e != nil {
		return e
	}
	if e := s.checkModel(req.Model); e != nil {
		return e
	}
	if req.Messages != nil {
		return badRequest("messages", "chat messages are not tokenized here: this server applies no chat template")
	}
	if req.Prompt == nil {
		return badRequest("prompt", "prompt is missing")
	}
	addSpecial := req.AddSpecialTokens == nil || *req.AddSpecialTokens || s.cfg.TokenizeBOS
	ids := s.tok.Encode(*req.Prompt, addSpecial, false)
	if id, ok := s.specialText(*req.Prompt); ok {
		ids = []int32{id}
	}
	resp := tokenizeResponse{Count: len(ids), MaxModelLen: s.ctx, Tokens: ids}
	if resp.Tokens == nil {
		resp.Tokens = []int32{}
	}
	if req.ReturnTokenStrs {
		for _, id := range ids {
			resp.TokenStrs = append(resp.TokenStrs, s.tok.TokenText(id))
		}
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// specialText is the BOS or EOS id whose text t is.
func (s *Server) specialText(t string) (int32, bool) {
	for _, id := range []int32{s.tok.BOS(), s.tok.EOS()} {
		if id >= 0 && t != "" && t == s.tok.TokenText(id) {
			return id, true
		}
	}
	return 0, false
}

type detokenizeRequest struct {
	Model  string          `json:"model"`
	Tokens json.RawMessage `json:"tokens"`
}

// detokenize is vLLM's /detokenize: ids to their text, control tokens
// rendering as nothing.
func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) *apiError {
	release, e := s.admitLight()
	if e != nil {
		return e
	}
	defer release()
	var req detokenizeRequest
	if e := s.decode(w, r, &req); e != nil {
		return e
	}
	if e := s.checkModel(req.Model); e != nil {
		return e
	}
	if !given(req.Tokens) {
		return badRequest("tokens", "tokens is missing")
	}
	ids, e := s.idsOf(req.Tokens, "tokens", 0)
	if e != nil {
		return e
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": s.tok.Decode(ids)})
	return nil
}

// tokenizerInfo is vLLM's /tokenizer_info, as far as a GGUF vocabulary
// says it: the special tokens' texts, whether BOS is added, the context.
func (s *Server) tokenizerInfo(w http.ResponseWriter, _ *http.Request) *apiError {
	text := func(id int32) any {
		if id < 0 {
			return nil
		}
		return s.tok.TokenText(id)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"tokenizer_class":  "plexbench-gguf-" + s.tok.Kind(),
		"bos_token":        text(s.tok.BOS()),
		"eos_token":        text(s.tok.EOS()),
		"pad_token":        nil,
		"add_bos_token":    s.tok.AddBOS(),
		"add_eos_token":    s.tok.AddEOS(),
		"model_max_length": s.ctx,
		"vocab_size":       s.vocab,
		"chat_template":    nil,
		"tokenizer_sha256": s.info.TokenizerSHA256,
	})
	return nil
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) *apiError {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.cfg.ModelName, "object": "model", "created": s.created, "owned_by": ServerName,
		"root": s.info.Path, "parent": nil, "max_model_len": s.ctx,
	}}})
	return nil
}

// modelInfo is SGLang's /get_model_info.
func (s *Server) modelInfo(w http.ResponseWriter, _ *http.Request) *apiError {
	writeJSON(w, http.StatusOK, map[string]any{"model_path": s.info.Path, "tokenizer_path": s.info.Path,
		"is_generation": true, "served_by": ServerName})
	return nil
}

// versionInfo is /version: what a client needs to know it talks to
// plexbench, which APIs it speaks and what it serves.
type versionInfo struct {
	Version         string   `json:"version"`
	Server          string   `json:"server"`
	APIs            []string `json:"apis"`
	Model           string   `json:"model"`
	ModelPath       string   `json:"model_path"`
	MaxModelLen     int      `json:"max_model_len"`
	VocabSize       int      `json:"vocab_size"`
	AddBOS          bool     `json:"add_bos"`
	BOS             int32    `json:"bos"`
	TokenizerSHA256 string   `json:"tokenizer_sha256,omitempty"`
	MaxLogprobs     int      `json:"max_logprobs"`
	Backend         string   `json:"backend"`
	GoVersion       string   `json:"go_version"`
}

func (s *Server) version(w http.ResponseWriter, _ *http.Request) *apiError {
	v := s.cfg.Version
	if v == "" {
		v = "devel"
	}
	writeJSON(w, http.StatusOK, versionInfo{Version: v, Server: ServerName, APIs: []string{"openai", "vllm", "sglang"},
		Model: s.cfg.ModelName, ModelPath: s.info.Path, MaxModelLen: s.ctx, VocabSize: s.vocab,
		AddBOS: s.info.AddBOS, BOS: s.info.BOS, TokenizerSHA256: s.info.TokenizerSHA256, MaxLogprobs: s.cfg.MaxLogprobs,
		Backend: s.eng.Config().Backend, GoVersion: runtime.Version()})
	return nil
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) *apiError {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}
