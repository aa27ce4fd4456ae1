// ppl.c: llama-perplexity's chunked loop (-fa off, 2 threads, BOS per chunk,
// rows ctx/2..ctx-2 scored) over a prebuilt libllama, through its C API.
// The parameter structs are opaque blobs patched at the offsets of
// llama.cpp 0.5.0 as packaged in @node-llama-cpp/linux-x64@3.22.1 (see run.sh).
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <stdbool.h>
#include <math.h>
typedef struct { unsigned char b[512]; } blob;
typedef struct { int32_t n_tokens; int32_t *token; float *embd; int32_t *pos; int32_t *n_seq_id; int32_t **seq_id; int8_t *logits; } llama_batch;
blob llama_context_default_params(void);
blob llama_model_default_params(void);
void llama_backend_init(void);
void ggml_backend_load_all_from_path(const char*);
void *ggml_backend_load(const char*);
void ggml_backend_register(void*);
void *llama_model_load_from_file(const char*, blob);
void *llama_init_from_model(void*, blob);
const void *llama_model_get_vocab(const void*);
int32_t llama_tokenize(const void*, const char*, int32_t, int32_t*, int32_t, bool, bool);
int32_t llama_vocab_n_tokens(const void*);
int32_t llama_vocab_bos(const void*);
bool llama_vocab_get_add_bos(const void*);
llama_batch llama_batch_init(int32_t, int32_t, int32_t);
int32_t llama_decode(void*, llama_batch);
float *llama_get_logits_ith(void*, int32_t);
void *llama_get_memory(void*);
void llama_memory_clear(void*, bool);
void llama_log_set(void*, void*);
const char *ggml_get_name(const void*);
size_t ggml_nbytes(const void*);
void ggml_backend_tensor_get(const void*, void*, size_t, size_t);
static int dumping = 0, dumpidx = 0; static FILE *dumpidxf;
static bool cb(void *t, bool ask, void *ud) {
  (void)ud;
  if (ask) return dumping;
  if (!dumping) return true;
  const char *nm = ggml_get_name(t);
  int32_t type = *(int32_t*)t; int64_t *ne = (int64_t*)((char*)t+16);
  size_t nb = ggml_nbytes(t);
  void *buf = malloc(nb); ggml_backend_tensor_get(t, buf, 0, nb);
  char p[512]; snprintf(p, sizeof p, "%s/%04d.bin", getenv("DUMPDIR"), dumpidx);
  FILE *f = fopen(p, "wb"); fwrite(buf, 1, nb, f); fclose(f); free(buf);
  fprintf(dumpidxf, "%04d\t%s\t%d\t%lld\t%lld\t%lld\t%lld\n", dumpidx, nm, type, (long long)ne[0], (long long)ne[1], (long long)ne[2], (long long)ne[3]);
  dumpidx++;
  return true;
}
static void quiet(int l, const char*t, void*u){ (void)l;(void)t;(void)u; }
int main(int argc, char**argv){
  // ppl MODEL TEXT CTX KVTYPE(0=f32,1=f16) [dumplogits file]
  const char *L = getenv("LIBDIR");
  if (!getenv("VERBOSE")) llama_log_set(quiet, NULL);
  if (getenv("CPUV")) { char p[1024]; snprintf(p,sizeof p,"%s/libggml-cpu-%s.so",L,getenv("CPUV")); void *r=ggml_backend_load(p); if(!r){fprintf(stderr,"no %s\n",p);return 1;} } else ggml_backend_load_all_from_path(L);
  llama_backend_init();
  int n_ctx = atoi(argv[3]); int kvt = atoi(argv[4]);
  blob mp = llama_model_default_params();
  void *model = llama_model_load_from_file(argv[1], mp);
  if (!model) { fprintf(stderr,"load failed\n"); return 1; }
  blob cp = llama_context_default_params();
  uint32_t *u = (uint32_t*)cp.b;
  u[0]=n_ctx; u[1]=n_ctx; u[2]=n_ctx; u[3]=1; u[7]=getenv("NT")?atoi(getenv("NT")):2; u[8]=u[7];
  int32_t *s=(int32_t*)cp.b; s[13]= getenv("FA") ? atoi(getenv("FA")) : 0;
  s[26]=kvt; s[27]=kvt;
  if (getenv("DUMPDIR")) { void **pp=(void**)(cp.b+88); pp[0]=(void*)cb; pp[1]=NULL; char p[512]; snprintf(p,sizeof p,"%s/index.tsv",getenv("DUMPDIR")); dumpidxf=fopen(p,"w"); }
  void *ctx = llama_init_from_model(model, cp);
  if (!ctx) { fprintf(stderr,"ctx failed\n"); return 1; }
  const void *vocab = llama_model_get_vocab(model);
  FILE *f = fopen(argv[2],"rb"); fseek(f,0,SEEK_END); long sz=ftell(f); fseek(f,0,SEEK_SET);
  char *text = malloc(sz+1); fread(text,1,sz,f); text[sz]=0; fclose(f);
  if (sz>0 && text[sz-1]=='\n') text[--sz]=0;
  int32_t *tok = malloc(sizeof(int32_t)*(sz+16));
  int nt = llama_tokenize(vocab, text, sz, tok, sz+16, true, false);
  int nv = llama_vocab_n_tokens(vocab);
  if (getenv("TOKOUT")) { FILE *tf=fopen(getenv("TOKOUT"),"wb"); fwrite(tok,4,nt,tf); fclose(tf); }
  if (getenv("NCHUNK")) { int m=atoi(getenv("NCHUNK")); if (m*n_ctx<nt) nt=m*n_ctx; }
  int n_chunk = nt / n_ctx; int first = n_ctx/2;
  FILE *dl = argc>5 ? fopen(argv[5],"wb") : NULL;
  double nll=0; int cnt=0;
  llama_batch b = llama_batch_init(n_ctx, 0, 1);
  for (int c=0;c<n_chunk;c++){
    int start=c*n_ctx;
    llama_memory_clear(llama_get_memory(ctx), true);
    b.n_tokens=n_ctx;
    for(int k=0;k<n_ctx;k++){ b.token[k]=tok[start+k]; b.pos[k]=k; b.n_seq_id[k]=1; b.seq_id[k][0]=0; b.logits[k]= k>=first; }
    if (llama_vocab_get_add_bos(vocab)) b.token[0]=llama_vocab_bos(vocab);
    dumping = getenv("DUMPDIR") && c==0;
    if (llama_decode(ctx,b)) { fprintf(stderr,"decode failed\n"); return 1; }
    if (dumping) { fclose(dumpidxf); dumping=0; }
    for(int j=first;j<n_ctx-1;j++){
      const float *lg = llama_get_logits_ith(ctx,j);
      if (dl) fwrite(lg,4,nv,dl);
      float mx=lg[0]; for(int i=1;i<nv;i++) if(lg[i]>mx) mx=lg[i];
      double se=0; for(int i=0;i<nv;i++) se+=exp(lg[i]-mx);
      nll += -(lg[tok[start+j+1]]-mx - log(se)); cnt++;
    }
  }
  if (dl) fclose(dl);
  printf("tokens %d chunks %d ppl %.8f\n", nt, n_chunk, exp(nll/cnt));
  return 0;
}
