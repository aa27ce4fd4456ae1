package served

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDetect: the API is read from what each server says of itself, and
// a server that says nothing is refused with one line asking for --api.
func TestDetect(t *testing.T) {
	routes := func(r map[string]any) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			v, ok := r[req.Method+" "+req.URL.Path]
			if !ok {
				v, ok = r[req.URL.Path]
			}
			switch v := v.(type) {
			case nil:
				http.NotFound(w, req)
			case refusal:
				http.Error(w, string(v), http.StatusBadRequest)
			default:
				json.NewEncoder(w).Encode(v)
			}
		}))
	}
	models := func(owner string) map[string]any {
		return map[string]any{"data": []any{map[string]any{"id": "m", "owned_by": owner}}}
	}
	for _, c := range []struct {
		name   string
		routes map[string]any
		api    string
		topK   int
		err    string
	}{
		{"vllm owned_by", map[string]any{"/v1/models": models("vllm")}, APIVLLM, VLLMMaxTopK, ""},
		{"vllm --max-logprobs 64", map[string]any{"GET /v1/models": models("vllm"),
			"POST /v1/completions": refusal(`{"object":"error","message":"Requested prompt logprobs of 1024, which is greater than max allowed: 64"}`)}, APIVLLM, 64, ""},
		{"sglang owned_by", map[string]any{"/v1/models": models("sglang")}, APISGLang, 0, ""},
		{"plexbench serve", map[string]any{"/v1/models": models("plexbench"), "/version": map[string]any{"version": "x", "server": "plexbench", "max_logprobs": 32}}, APISGLang, 32, ""},
		{"sglang model info", map[string]any{"/get_model_info": map[string]any{"model_path": "/m"}}, APISGLang, 0, ""},
		{"vllm version", map[string]any{"/v1/models": models("someone"), "/version": map[string]any{"version": "0.9"}}, APIVLLM, VLLMMaxTopK, ""},
		{"silent", map[string]any{"/v1/models": models("llamacpp")}, "", 0, "cannot tell its API from /v1/models, /get_model_info or /version: give --api vllm|sglang|openai"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := routes(c.routes)
			defer s.Close()
			e := &Engine{c: client{base: s.URL, http: s.Client()}}
			err := e.detect(context.Background(), "")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err %v, want one line with %q", err, c.err)
				}
				return
			}
			if err != nil || e.api != c.api || e.maxTopK != c.topK {
				t.Fatalf("api %q max top-k %d (%v), want %q %d", e.api, e.maxTopK, err, c.api, c.topK)
			}
		})
	}
}

// TestSGLangGroups: a window's rows split into consecutive groups whose
// union of named ids, times their rows, stays within the bounds; every
// row in exactly one group, in order.
func TestSGLangGroups(t *testing.T) {
	named := make([][]int32, 300)
	for i := range named {
		for j := range 64 {
			named[i] = append(named[i], int32((i*7+j*13)%20000))
		}
	}
	groups := sglangGroups(named, len(named))
	next := 0
	for _, g := range groups {
		if g[0] != next || g[1] <= g[0] {
			t.Fatalf("groups %v: not consecutive at %d", groups, next)
		}
		u := map[int32]bool{}
		for _, ids := range named[g[0]:g[1]] {
			for _, id := range ids {
				u[id] = true
			}
		}
		if (g[1]-g[0])*len(u) > sglangGroupValues || len(u) > sglangMaxUnion {
			t.Errorf("group %v: %d rows × %d ids", g, g[1]-g[0], len(u))
		}
		next = g[1]
	}
	if next != len(named) || len(groups) < 2 {
		t.Fatalf("groups %v cover %d of %d rows", groups, next, len(named))
	}
	if g := sglangGroups(nil, 7); len(g) != 1 || g[0] != [2]int{0, 7} {
		t.Errorf("no named ids: groups %v, want one", g)
	}
}

// refusal is a 400 answer's body.
type refusal string
