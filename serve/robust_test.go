package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// errorReply is the JSON error every refusal carries.
type errorReply struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

// TestBadRequests: each bad request gets its 4xx status with a JSON error
// saying what was wrong, and the server answers a good request after all
// of them.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	m := loadModel(t, "stories260K-q8_0.gguf")
	_, url := start(t, m, Config{MaxBody: 4096, MaxPrompts: 8})
	long := make([]int32, testKV+1)
	for i := range long {
		long[i] = 300
	}
	gen := func(extra string) string {
		return `{"input_ids":[1,300,301],"sampling_params":{"max_new_tokens":0},"return_logprob":true` + extra + `}`
	}
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"malformed JSON", "POST", "/v1/completions", `{"prompt": [1, 2`, 400, "malformed JSON"},
		{"not JSON", "POST", "/generate", `hello`, 400, "malformed JSON"},
		{"empty body", "POST", "/v1/completions", ``, 400, "empty request body"},
		{"two values", "POST", "/v1/completions", `{"prompt":"a"} {"prompt":"b"}`, 400, "more than one JSON value"},
		{"wrong type", "POST", "/v1/completions", `{"prompt":"a","max_tokens":"x"}`, 400, "malformed JSON"},
		{"unknown route", "POST", "/v1/chat/completions", `{}`, 404, "no route POST /v1/chat/completions"},
		{"unknown route GET", "GET", "/", ``, 404, "no route GET /"},
		{"wrong method", "GET", "/v1/completions", ``, 405, "/v1/completions takes POST, not GET"},
		{"wrong method tokenize", "DELETE", "/tokenize", ``, 405, "takes POST"},
		{"prompt over the context", "POST", "/v1/completions", fmt.Sprintf(`{"prompt":%s,"max_tokens":0}`, ids(long)), 400,
			"prompt has 129 tokens; this server's context holds 128"},
		{"text over the context", "POST", "/v1/completions", `{"prompt":"` + strings.Repeat("Once upon a time. ", 40) + `"}`, 400,
			"this server's context holds 128"},
		{"batch over the context", "POST", "/v1/completions", fmt.Sprintf(`{"prompt":[[1,2],%s]}`, ids(long)), 400, "prompt[1] has 129 tokens"},
		{"body over the limit", "POST", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 5000) + `"}`, 413, "request body over 4096 bytes"},
		{"too many prompts", "POST", "/v1/completions", `{"prompt":["a","b","c","d","e","f","g","h","i"]}`, 400, "holds 9 prompts; at most 8"},
		{"id outside the vocabulary", "POST", "/v1/completions", `{"prompt":[1,512]}`, 400, "prompt[1] is 512: not a token id of this vocabulary (0..511)"},
		{"negative id", "POST", "/v1/completions", `{"prompt":[-1]}`, 400, "not a token id"},
		{"fractional id", "POST", "/v1/completions", `{"prompt":[1.5]}`, 400, "not a token id"},
		{"mixed batch", "POST", "/v1/completions", `{"prompt":[1,"a"]}`, 400, "prompt[1] is a string: want a token id"},
		{"object prompt", "POST", "/v1/completions", `{"prompt":{"a":1}}`, 400, "prompt is an object"},
		{"no prompt", "POST", "/v1/completions", `{"max_tokens":0}`, 400, "prompt is missing"},
		{"empty list", "POST", "/v1/completions", `{"prompt":[]}`, 400, "prompt is an empty list"},
		{"empty prompt", "POST", "/v1/completions", `{"prompt":[[]]}`, 400, "prompt[0] is empty: no tokens to score"},
		{"empty text", "POST", "/v1/completions", `{"prompt":"","add_special_tokens":false}`, 400, "prompt is empty: no tokens"},
		{"two tokens", "POST", "/v1/completions", `{"prompt":"a","max_tokens":2}`, 400, "max_tokens 2: this server scores prompts"},
		{"sampling", "POST", "/v1/completions", `{"prompt":"a","temperature":0.7}`, 400, "greedy only"},
		{"n", "POST", "/v1/completions", `{"prompt":"a","n":3}`, 400, "one choice per prompt"},
		{"stream", "POST", "/v1/completions", `{"prompt":"a","stream":true}`, 400, "streaming is not supported"},
		{"logprobs over the limit", "POST", "/v1/completions", `{"prompt":"a","logprobs":21}`, 400, "logprobs 21: want 0..20"},
		{"prompt_logprobs -2", "POST", "/v1/completions", `{"prompt":"a","prompt_logprobs":-2}`, 400, "prompt_logprobs -2"},
		{"other model", "POST", "/v1/completions", `{"model":"llama-70b","prompt":"a"}`, 404, `the model "llama-70b" does not exist here`},
		{"text and ids", "POST", "/generate", `{"text":"a","input_ids":[1]}`, 400, "either text or input_ids"},
		{"neither", "POST", "/generate", `{}`, 400, "either text or input_ids"},
		{"start past the prompt", "POST", "/generate", gen(`,"logprob_start_len":3`), 400, "logprob_start_len 3: want -1 or 0..2"},
		{"named id outside", "POST", "/generate", gen(`,"token_ids_logprob":[600]`), 400, "token_ids_logprob[0] is 600"},
		{"generate two tokens", "POST", "/generate", `{"input_ids":[1],"sampling_params":{"max_new_tokens":16}}`, 400, "max_new_tokens 16"},
		{"per-prompt list length", "POST", "/generate", `{"input_ids":[[1,2],[1,3]],"return_logprob":[true]}`, 400, "return_logprob has 1 entries for 2 prompts"},
		{"tokenize nothing", "POST", "/tokenize", `{}`, 400, "prompt is missing"},
		{"tokenize chat", "POST", "/tokenize", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "no chat template"},
		{"detokenize text", "POST", "/detokenize", `{"tokens":["a"]}`, 400, "tokens[0] is a string"},
		{"detokenize outside", "POST", "/detokenize", `{"tokens":[1,99999]}`, 400, "tokens[1] is 99999"},
	}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, url+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e errorReply
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != c.status || e.Error.Code != c.status ||
			!strings.Contains(e.Error.Message, c.want) || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s (%v), want %d saying %q", c.name, resp.StatusCode, body, err, c.status, c.want)
		}
		if c.status == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s: 405 without Allow", c.name)
		}
	}
	var ok completion
	postOK(t, url+"/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 1, "logprobs": 1, "echo": true}, &ok)
	if len(ok.Choices) != 1 || ok.Choices[0].Logprobs == nil {
		t.Errorf("a good request after the bad ones: %+v", ok)
	}
}

func ids(v []int32) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestAPIKey: with a key, every route but /health wants it as a bearer
// token (401 otherwise).
func TestAPIKey(t *testing.T) {
	t.Parallel()
	m := loadModel(t, "stories260K-q8_0.gguf")
	_, url := start(t, m, Config{APIKey: "sekret"})
	for _, c := range []struct {
		path, auth string
		status     int
	}{
		{"/v1/models", "", 401}, {"/v1/models", "Bearer wrong", 401}, {"/v1/models", "sekret", 401},
		{"/v1/models", "Bearer sekret", 200}, {"/version", "", 401}, {"/tokenizer_info", "", 401}, {"/health", "", 200},
	} {
		req, _ := http.NewRequest("GET", url+c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || (c.status == 401 && !strings.Contains(string(body), "API key")) {
			t.Errorf("GET %s with %q: %d %s, want %d", c.path, c.auth, resp.StatusCode, body, c.status)
		}
	}
	code, body := post(t, url+"/v1/completions", `{"prompt":"a"}`)
	if code != 401 {
		t.Errorf("POST without the key: %d %s", code, body)
	}
}

// TestThousandConcurrent: 1,000 requests at once against one running and
// a queue of 4: the 995 beyond get 429 with a JSON error at once, the 5
// admitted complete, and the server answers afterwards.
func TestThousandConcurrent(t *testing.T) {
	t.Parallel()
	g := newGated(loadModel(t, "stories260K-q8_0.gguf"))
	_, url := start(t, g, Config{Queue: 4})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}, Timeout: 2 * time.Minute}
	defer client.CloseIdleConnections()
	const n = 1000
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"prompt":[1,%d,301],"max_tokens":1,"logprobs":1,"echo":true}`, 300+i%100)
			resp, err := client.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				codes <- 0
				return
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e errorReply
			if resp.StatusCode == 429 && (json.Unmarshal(data, &e) != nil || e.Error.Code != 429) {
				t.Errorf("429 without a JSON error: %s", data)
			}
			codes <- resp.StatusCode
		})
	}
	count := map[int]int{}
	for range n - 5 {
		count[<-codes]++ // the 5 admitted wait on the engine until released
	}
	close(g.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		count[c]++
	}
	if count[429] != n-5 || count[200] != 5 {
		t.Errorf("statuses %v, want %d × 429 and 5 × 200", count, n-5)
	}
	var ok completion
	postOK(t, url+"/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 1}, &ok)
}

// TestClientGone: a client that disconnects mid-response, while its
// request runs, or while it waits in the queue, costs the server nothing:
// the engine and the queue slot are freed and the next requests are
// answered.
func TestClientGone(t *testing.T) {
	t.Parallel()
	m := loadModel(t, "stories260K-q8_0.gguf")
	g := newGated(m)
	srv, url := start(t, g, Config{Queue: 1, MaxLogprobs: 20})
	close(g.release)
	// Mid-response: a ~3 MB answer, read 1 kB of, then the connection closed.
	var prompts [][]int32
	for range 16 {
		p := make([]int32, testKV)
		for i := range p {
			p[i] = int32(1 + i*7%500)
		}
		prompts = append(prompts, p)
	}
	body, _ := json.Marshal(map[string]any{"prompt": prompts, "max_tokens": 1, "prompt_logprobs": 20, "logprobs": 20, "echo": true})
	host := strings.TrimPrefix(url, "http://")
	for range 3 {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body)
		r := bufio.NewReader(conn)
		status, err := r.ReadString('\n')
		if err != nil || !strings.Contains(status, "200") {
			t.Fatalf("status line %q: %v", status, err)
		}
		if _, err := io.ReadFull(r, make([]byte, 1024)); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	// A client that stops reading holds no engine: the next request is
	// answered while the stalled one's answer waits in the socket.
	stalled, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	fmt.Fprintf(stalled, "POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body)
	var ok completion
	postOK(t, url+"/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 1}, &ok)
	waitFor(t, func() bool { return len(srv.queue) == 0 }, "the stalled request to leave the queue")
	postOK(t, url+"/v1/completions", map[string]any{"prompt": "Once upon a time", "max_tokens": 1}, &ok)

	// While running and while queued: a held engine.
	g = newGated(m)
	srv, url = start(t, g, Config{Queue: 1})
	send := func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/completions", strings.NewReader(`{"prompt":[1,300,301],"max_tokens":1}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			data, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("%d %s", resp.StatusCode, data)
		}
		return nil
	}
	running, stopRunning := context.WithCancel(context.Background())
	errc := make(chan error, 3)
	go func() { errc <- send(running) }()
	<-g.started // its prefill waits on the gate
	queued, stopQueued := context.WithCancel(context.Background())
	go func() { errc <- send(queued) }()
	waitFor(t, func() bool { return len(srv.queue) == 2 }, "the second request queued")
	stopQueued()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("queued request: %v, want it cancelled", err)
	}
	waitFor(t, func() bool { return len(srv.queue) == 1 }, "the queued request's slot freed")
	stopRunning()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("running request: %v, want it cancelled", err)
	}
	waitFor(t, func() bool { return len(srv.queue) == 0 && len(srv.run) == 0 }, "the engine freed")
	close(g.release)
	if err := send(context.Background()); err != nil {
		t.Errorf("after the clients left: %v", err)
	}
}

// waitFor polls cond until it holds, failing after 10 seconds.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestShutdown: once Serve's context ends it stops accepting, lets the
// request in flight finish and returns; past the grace period it cuts
// the request still running and says so.
func TestShutdown(t *testing.T) {
	t.Parallel()
	m := loadModel(t, "stories260K-q8_0.gguf")
	for _, cut := range []bool{false, true} {
		g := newGated(m)
		srv, err := New(g, Config{})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + ln.Addr().String()
		ctx, stop := context.WithCancel(context.Background())
		grace := 20 * time.Second
		if cut {
			grace = 200 * time.Millisecond
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, ln, grace, nil) }()
		answered := make(chan int, 1)
		go func() {
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":[1,300],"max_tokens":1}`))
			if err != nil {
				answered <- 0
				return
			}
			resp.Body.Close()
			answered <- resp.StatusCode
		}()
		<-g.started
		stop()
		if cut {
			err := <-served
			if err == nil || !strings.Contains(err.Error(), "shutdown") {
				t.Errorf("cut: Serve returned %v, want a shutdown error", err)
			}
			if code := <-answered; code == 200 {
				t.Errorf("cut: the request in flight was answered %d", code)
			}
			continue
		}
		select {
		case err := <-served:
			t.Fatalf("Serve returned %v with a request in flight", err)
		case <-time.After(100 * time.Millisecond):
		}
		close(g.release)
		if code := <-answered; code != 200 {
			t.Errorf("the request in flight was answered %d", code)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if _, err := http.Get(url + "/health"); err == nil {
			t.Errorf("the server still answers after shutdown")
		}
	}
}

// TestLargeBodies: prompts of a megabyte and more are read as typed lists:
// a million ids is refused for its length, a large batch is scored, and
// a large value of the wrong shape is refused with what was wanted.
func TestLargeBodies(t *testing.T) {
	t.Parallel()
	m := loadModel(t, "stories260K-q8_0.gguf")
	_, url := start(t, m, Config{})
	url += "/v1/completions"
	million := make([]int32, 1_000_000)
	for i := range million {
		million[i] = 300
	}
	code, body := post(t, url, map[string]any{"prompt": million, "max_tokens": 0})
	if code != 400 || !strings.Contains(string(body), "prompt has 1000000 tokens; this server's context holds 128") {
		t.Errorf("a million ids: %d %s", code, body)
	}
	batch := make([][]int32, 256)
	for i := range batch {
		batch[i] = million[:testKV]
	}
	var c completion
	postOK(t, url, map[string]any{"prompt": batch, "max_tokens": 0, "logprobs": 0, "echo": true}, &c)
	if len(c.Choices) != 256 || len(c.Choices[255].Logprobs.TokenLogprobs) != testKV {
		t.Errorf("a batch of 256: %d choices", len(c.Choices))
	}
	wrong := append(make([]any, 0, 3000), "x")
	for range 3000 {
		wrong = append(wrong, million[:testKV])
	}
	code, body = post(t, url, map[string]any{"prompt": wrong, "max_tokens": 0})
	if code != 400 || !strings.Contains(string(body), "want a text, a list of token ids, or a list of either") {
		t.Errorf("a large value of the wrong shape: %d %s", code, body)
	}
}
