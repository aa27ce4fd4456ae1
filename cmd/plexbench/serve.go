package main

// serve.go owns `plexbench serve`: a model loaded with score's engine
// settings, behind the scoring HTTP API of package serve, until SIGINT or
// SIGTERM.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"plexbench/engine/gguf"
	"plexbench/kernels"
	"plexbench/profiles"
	"plexbench/serve"
	"plexbench/workbench"
)

// EnvAPIKey is read for the API key when --api-key is not given, so that
// the key need not appear in the process list.
const EnvAPIKey = "PLEXBENCH_API_KEY"

// serveKeys are the profile settings serve takes: the model and how the
// engine runs it.
var serveKeys = []string{"model", "batch_size", "ubatch_size", "kv_cache_dtype", "kv_len", "threads", "backend", "device",
	"prefill_attention", "flashprefill.block_size", "flashprefill.alpha", "flashprefill.sink_blocks", "flashprefill.window",
	"flashprefill.last_n_full", "flashprefill.min_budget", "strict_device_kernels", "kernels"}

// defaultServeContext bounds the KV cache serve allocates when neither
// --kv-len nor the profile sets one: the model's training context, at
// most this.
const defaultServeContext = 4096

type serveArgs struct {
	p                                    profiles.Profile
	profile, host, apiKey, name          string
	port, maxPrompts, maxLogprobs, queue int
	maxBody                              int64
	grace                                time.Duration
	tokenizeBOS                          bool
}

func (c *cli) serveCmd() *cobra.Command {
	cmd, fs := c.command("serve", "[--model M.gguf] [--port P] [flags]",
		"serve a model's log-probabilities over HTTP (OpenAI/vLLM completions, SGLang /generate) for lm-eval and score --server")
	cmd.Long = `Serves a model for scoring, not chat: prompt log-probabilities computed as score computes
them, through OpenAI's completions with echo + logprobs (lm-evaluation-harness's
local-completions), vLLM's prompt_logprobs, SGLang's /generate with token_ids_logprob,
and /tokenize, /detokenize, /tokenizer_info, /v1/models, /version, /health. It binds
127.0.0.1 unless --host says otherwise, runs one request at a time with --queue more
waiting (429 beyond), and stops on SIGINT or SIGTERM once the requests in flight end.
The longest prompt is --kv-len tokens (default: the model's training context, at most
4096). docs/serving.md has lm-eval's command line against it.`
	a := bindServe(fs)
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		if err := kernels.CPUError(); err != nil {
			return exitCode(c.fail(err))
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if code := c.serve(ctx, fs, a, pos); code != 0 {
			return exitCode(code)
		}
		return nil
	}
	return cmd
}

// bindServe defines serve's flags on fs.
func bindServe(fs *pflag.FlagSet) *serveArgs {
	a := &serveArgs{p: profiles.Default()}
	a.p.BindFlags(fs, serveKeys...)
	fs.StringVar(&a.profile, "profile", "", "a TOML profile for the model and engine settings; flags given beside it override them")
	fs.StringVar(&a.host, "host", "127.0.0.1", "the address to listen on (0.0.0.0 or :: for every interface: give --api-key too)")
	fs.IntVar(&a.port, "port", 8000, "the TCP port (0: a free one, said on stderr)")
	fs.StringVar(&a.apiKey, "api-key", "", "require 'Authorization: Bearer KEY' on every route but /health (default: $"+EnvAPIKey+")")
	fs.StringVar(&a.name, "served-model-name", "", "the model's id in the API (default: the file's name without .gguf)")
	fs.IntVar(&a.queue, "queue", serve.DefaultQueue, "requests that may wait while one runs; more are refused with 429")
	fs.Int64Var(&a.maxBody, "max-body", serve.DefaultMaxBody, "the largest request body, in bytes (413 beyond)")
	fs.IntVar(&a.maxPrompts, "max-prompts", serve.DefaultMaxPrompts, "prompts in one request, at most")
	fs.IntVar(&a.maxLogprobs, "max-logprobs", serve.DefaultMaxLogprobs, "top log-probabilities per position, at most (logprobs, prompt_logprobs, top_logprobs_num)")
	fs.BoolVar(&a.tokenizeBOS, "tokenize-bos", false, "make /tokenize add BOS when the vocabulary asks for it, even to a request that says add_special_tokens false\n"+
		"(lm-eval's remote tokenizer always does: with this its log-likelihood requests start with BOS, as score's windows do)")
	fs.DurationVar(&a.grace, "shutdown-grace", 30*time.Second, "on SIGINT/SIGTERM, how long the requests in flight may take before they are cut")
	return a
}

// serve loads the model and serves it until ctx ends; it returns the exit
// code.
func (c *cli) serve(ctx context.Context, fs *pflag.FlagSet, a *serveArgs, pos []string) int {
	if len(pos) > 0 {
		return c.fail(fmt.Errorf("serve: unexpected argument %q", pos[0]))
	}
	switch {
	case a.port < 0 || a.port > 65535:
		return c.fail(fmt.Errorf("serve: --port %d: want 0..65535", a.port))
	case a.queue < 1 || a.maxPrompts < 1 || a.maxLogprobs < 1 || a.maxBody < 1:
		return c.fail(fmt.Errorf("serve: --queue, --max-prompts, --max-logprobs and --max-body take a positive number"))
	case a.grace < 0:
		return c.fail(fmt.Errorf("serve: --shutdown-grace %v: want a duration ≥ 0", a.grace))
	}
	p, err := withProfile(fs, a.p, a.profile)
	if err != nil {
		return c.fail(err)
	}
	if p.Server != "" {
		return c.fail(fmt.Errorf("serve: --server %s: serve runs a model file (--model); score a served model with score --server", p.Server))
	}
	if p.KVLen == 0 && p.Model != "" {
		p.KVLen = trainingContext(p.Model)
	}
	key := a.apiKey
	if key == "" {
		key = c.getenv(EnvAPIKey)
	}
	b, err := workbench.Open(p)
	if err != nil {
		return c.fail(err)
	}
	defer b.Close()
	if b.Engine() == nil {
		return c.fail(fmt.Errorf("serve needs a model file to load, not a server (leave out --server)"))
	}
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(c.stderr, "plexbench serve: "+format+"\n", args...)
	}
	srv, err := serve.New(b.Engine(), serve.Config{ModelName: a.name, APIKey: key, MaxBody: a.maxBody,
		MaxPrompts: a.maxPrompts, MaxLogprobs: a.maxLogprobs, Queue: a.queue, TokenizeBOS: a.tokenizeBOS, Version: versionString(), Log: logf})
	if err != nil {
		return c.fail(err)
	}
	addr := net.JoinHostPort(a.host, strconv.Itoa(a.port))
	err = srv.ListenAndServe(ctx, addr, a.grace, func(at net.Addr) {
		logf("serving %s (%s) on http://%s: context %d tokens, 1 request at a time and %d queued; SIGINT or SIGTERM stops",
			srv.ModelName(), b.Info().Path, at, srv.Context(), a.queue)
		if ip, ok := at.(*net.TCPAddr); ok && !ip.IP.IsLoopback() && key == "" {
			logf("warning: listening beyond this machine (%s) without an API key (--api-key)", ip.IP)
		}
	})
	if err != nil {
		return c.fail(err)
	}
	logf("stopped")
	return 0
}

// trainingContext is the KV cache serve allocates for the model at path
// when nothing sets one: its training context, at most
// defaultServeContext; 0 (the engine's default) when the file does not
// say.
func trainingContext(path string) int {
	f, err := gguf.Open(path)
	if err != nil {
		return 0 // loading the model reports it
	}
	defer f.Close()
	n, ok := f.Uint(f.Architecture() + ".context_length")
	if !ok || n == 0 {
		return 0
	}
	return int(min(n, defaultServeContext))
}
