// bench.c: a timed llama-perplexity over a prebuilt libllama, for
// scripts/bench-llamacpp.sh. It runs what `llama-perplexity -m M -f TEXT
// -c CTX -b CTX -ub CTX -t NT -fa off --chunks N` runs: common_init's
// warm-up decode, the whole text tokenized (special tokens added, none
// parsed), one llama_decode per CTX-token chunk with BOS put first when the
// vocab adds it and logits asked for rows CTX/2..CTX-1, and the log-softmax
// of rows CTX/2..CTX-2 against the next token (expf summed in double over
// NT threads, as perplexity.cpp's process_logits). Parameter structs are
// patched at the offsets of the llama.cpp in @node-llama-cpp/linux-x64@3.22.1,
// as in ppl.c.
//
//	bench pick LIBDIR                the libggml-cpu-*.so variant ggml's loader picks here
//	bench MODEL TEXT CTX CHUNKS      env LIBDIR, CPUV (variant; unset: ggml picks), NT (threads, 2),
//	                                 TOKOUT (file for the text's token ids)
//
// The run prints one line of "key value" pairs: tokens, chunks, scored,
// ppl, and seconds for load, tokenize, decode (the llama_decode calls
// alone), score (the log-softmax), with prefill_tok_s = chunks·CTX/decode.
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { unsigned char b[512]; } blob;
typedef struct { int32_t n_tokens; int32_t *token; float *embd; int32_t *pos; int32_t *n_seq_id; int32_t **seq_id; int8_t *logits; } llama_batch;
blob llama_context_default_params(void);
blob llama_model_default_params(void);
void llama_backend_init(void);
void ggml_backend_load_all_from_path(const char *);
void *ggml_backend_load(const char *);
void *llama_model_load_from_file(const char *, blob);
void *llama_init_from_model(void *, blob);
const void *llama_model_get_vocab(const void *);
int32_t llama_tokenize(const void *, const char *, int32_t, int32_t *, int32_t, bool, bool);
int32_t llama_vocab_n_tokens(const void *);
int32_t llama_vocab_bos(const void *);
int32_t llama_vocab_eos(const void *);
bool llama_vocab_get_add_bos(const void *);
llama_batch llama_batch_init(int32_t, int32_t, int32_t);
int32_t llama_decode(void *, llama_batch);
void llama_synchronize(void *);
float *llama_get_logits_ith(void *, int32_t);
void *llama_get_memory(void *);
void llama_memory_clear(void *, bool);
void llama_log_set(void *, void *);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void quiet(int l, const char *t, void *u) { (void)l; (void)t; (void)u; }

// pick prints the variant ggml_backend_load_best would load from dir: the
// libggml-cpu-*.so whose ggml_backend_score() is highest (the first found
// on a tie, in directory order, as ggml iterates).
static int pick(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) { perror(dir); return 1; }
  char best[256] = "";
  int best_score = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (strncmp(e->d_name, "libggml-cpu-", 12) || n < 16 || strcmp(e->d_name + n - 3, ".so")) continue;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    int (*score)(void) = (int (*)(void))dlsym(h, "ggml_backend_score");
    int s = score ? score() : 0;
    if (s > best_score) {
      best_score = s;
      snprintf(best, sizeof best, "%.*s", (int)(n - 15), e->d_name + 12);
    }
    dlclose(h);
  }
  closedir(d);
  if (!best_score) { fprintf(stderr, "no libggml-cpu-*.so in %s supports this CPU\n", dir); return 1; }
  printf("%s\n", best);
  return 0;
}

// The log-softmax of the scored rows, split over threads by row.
typedef struct {
  void *ctx;
  const int32_t *next; // next[j] is row j's target
  int first, last, nv, stride, id;
  double nll;
} scorer;

static void *score_rows(void *arg) {
  scorer *s = arg;
  for (int j = s->first + s->id; j < s->last; j += s->stride) {
    const float *lg = llama_get_logits_ith(s->ctx, j);
    float mx = lg[0];
    for (int i = 1; i < s->nv; i++) if (lg[i] > mx) mx = lg[i];
    double se = 0;
    for (int i = 0; i < s->nv; i++) se += expf(lg[i] - mx);
    s->nll -= lg[s->next[j]] - mx - log(se);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "pick")) return pick(argv[2]);
  if (argc != 5) {
    fprintf(stderr, "usage: bench pick LIBDIR | bench MODEL TEXT CTX CHUNKS (env LIBDIR, CPUV, NT, TOKOUT)\n");
    return 2;
  }
  double t0 = now();
  const char *L = getenv("LIBDIR");
  if (!L) { fprintf(stderr, "LIBDIR unset\n"); return 2; }
  if (!getenv("VERBOSE")) llama_log_set(quiet, NULL);
  if (getenv("CPUV")) {
    char p[1024];
    snprintf(p, sizeof p, "%s/libggml-cpu-%s.so", L, getenv("CPUV"));
    if (!ggml_backend_load(p)) { fprintf(stderr, "cannot load %s\n", p); return 1; }
  } else {
    ggml_backend_load_all_from_path(L);
  }
  llama_backend_init();
  int n_ctx = atoi(argv[3]), n_chunk_max = atoi(argv[4]);
  int nt = getenv("NT") ? atoi(getenv("NT")) : 2;
  if (n_ctx < 4 || nt < 1) { fprintf(stderr, "bad ctx or NT\n"); return 2; }

  void *model = llama_model_load_from_file(argv[1], llama_model_default_params());
  if (!model) { fprintf(stderr, "load %s failed\n", argv[1]); return 1; }
  blob cp = llama_context_default_params();
  uint32_t *u = (uint32_t *)cp.b;
  u[0] = n_ctx; u[1] = n_ctx; u[2] = n_ctx; u[3] = 1; // n_ctx, n_batch, n_ubatch, n_seq_max
  u[7] = nt; u[8] = nt;                                // n_threads, n_threads_batch
  ((int32_t *)cp.b)[13] = 0;                           // flash_attn_type: disabled
  void *ctx = llama_init_from_model(model, cp);
  if (!ctx) { fprintf(stderr, "context failed\n"); return 1; }
  const void *vocab = llama_model_get_vocab(model);
  int nv = llama_vocab_n_tokens(vocab);
  llama_batch b = llama_batch_init(n_ctx, 0, 1);

  // common_init_from_params' warm-up: BOS and EOS decoded, then forgotten.
  int nw = 0;
  if (llama_vocab_bos(vocab) >= 0) b.token[nw++] = llama_vocab_bos(vocab);
  if (llama_vocab_eos(vocab) >= 0) b.token[nw++] = llama_vocab_eos(vocab);
  if (nw) {
    b.n_tokens = nw;
    for (int k = 0; k < nw; k++) { b.pos[k] = k; b.n_seq_id[k] = 1; b.seq_id[k][0] = 0; b.logits[k] = k == nw - 1; }
    if (llama_decode(ctx, b)) { fprintf(stderr, "warm-up decode failed\n"); return 1; }
    llama_memory_clear(llama_get_memory(ctx), true);
    llama_synchronize(ctx);
  }
  double t_load = now();

  FILE *f = fopen(argv[2], "rb");
  if (!f) { perror(argv[2]); return 1; }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc(sz + 1);
  if (fread(text, 1, sz, f) != (size_t)sz) { fprintf(stderr, "read %s failed\n", argv[2]); return 1; }
  text[sz] = 0;
  fclose(f);
  if (sz > 0 && text[sz - 1] == '\n') text[--sz] = 0; // as llama.cpp's -f
  int32_t *tok = malloc(sizeof(int32_t) * (sz + 16));
  int ntok = llama_tokenize(vocab, text, sz, tok, sz + 16, true, false);
  if (ntok < 0) { fprintf(stderr, "tokenize failed\n"); return 1; }
  if (getenv("TOKOUT")) { // the ids as little-endian int32, to compare with plexbench's token_ids_sha256
    FILE *tf = fopen(getenv("TOKOUT"), "wb");
    if (!tf || fwrite(tok, 4, ntok, tf) != (size_t)ntok || fclose(tf)) { perror(getenv("TOKOUT")); return 1; }
  }
  double t_tok = now();

  int n_chunk = ntok / n_ctx;
  if (n_chunk_max > 0 && n_chunk_max < n_chunk) n_chunk = n_chunk_max;
  int first = n_ctx / 2;
  double nll = 0, t_decode = 0, t_score = 0;
  pthread_t th[64];
  scorer sc[64];
  if (nt > 64) nt = 64;
  for (int c = 0; c < n_chunk; c++) {
    int start = c * n_ctx;
    llama_memory_clear(llama_get_memory(ctx), true);
    b.n_tokens = n_ctx;
    for (int k = 0; k < n_ctx; k++) { b.token[k] = tok[start + k]; b.pos[k] = k; b.n_seq_id[k] = 1; b.seq_id[k][0] = 0; b.logits[k] = k >= first; }
    if (llama_vocab_get_add_bos(vocab)) b.token[0] = llama_vocab_bos(vocab);
    double d0 = now();
    if (llama_decode(ctx, b)) { fprintf(stderr, "decode failed\n"); return 1; }
    llama_synchronize(ctx);
    double d1 = now();
    for (int i = 0; i < nt; i++) {
      sc[i] = (scorer){ctx, tok + start + 1, first, n_ctx - 1, nv, nt, i, 0};
      if (i) pthread_create(&th[i], NULL, score_rows, &sc[i]);
    }
    score_rows(&sc[0]);
    for (int i = 1; i < nt; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < nt; i++) nll += sc[i].nll;
    t_decode += d1 - d0;
    t_score += now() - d1;
  }
  int scored = n_chunk * (n_ctx - 1 - first);
  printf("tokens %d chunks %d scored %d ppl %.8f load_s %.3f tokenize_s %.3f decode_s %.3f score_s %.3f prefill_tok_s %.2f\n",
         ntok, n_chunk, scored, exp(nll / scored), t_load - t0, t_tok - t_load, t_decode, t_score,
         t_decode > 0 ? n_chunk * n_ctx / t_decode : 0.0);
  return 0;
}
