package engine

// This file owns the loaded model: Options and their defaults, Load and
// Close, the global weights every architecture shares (embedding, output
// norm, LM head), and the Info/Config descriptions.

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"

	"plexbench/engine/gguf"
	"plexbench/engine/tokenizer"
	"plexbench/hip"
	"plexbench/internal/sysmem"
	"plexbench/kernels"
)

// Sentinel errors; Load wraps every failure in one of these (or in a gguf
// sentinel) together with the model's path.
var (
	// ErrModel: the file lacks a tensor or key, or one has the wrong shape.
	ErrModel = errors.New("invalid model")
	// ErrUnsupported: a valid model this engine cannot run (architecture,
	// tensor type, rope scaling, KV cache type).
	ErrUnsupported = errors.New("unsupported")
	// ErrInput: bad tokens or lengths passed to Prefill, HeadReduce or Generate.
	ErrInput = errors.New("invalid input")
)

// Defaults for zero Options fields.
const (
	DefaultBatchSize  = 2048
	DefaultUBatchSize = 512
	DefaultKVLen      = 4096
)

// Options say how the engine runs. Zero fields take the defaults above; a
// zero Threads means one per CPU (GOMAXPROCS).
type Options struct {
	Threads int
	// BatchSize is llama.cpp's -b (the logical batch), UBatchSize its -ub.
	// As in llama.cpp a pass holds at most min(BatchSize, UBatchSize) tokens.
	BatchSize, UBatchSize int
	// KVLen is the KV cache capacity in positions: the longest window.
	KVLen int
	// KVType is the KV cache dtype: kernels.F32, F16, BF16 or Q8_0. ggml's
	// type ids make the zero value F32; llama.cpp's default is F16, which
	// callers (the CLI) pass explicitly.
	KVType kernels.Type
	// Kernels picks each op's kernel variant (kernels.ParseKernels, e.g.
	// "matmul=ref"); the zero value runs the fastest this CPU supports.
	Kernels kernels.KernelSet
	// FlashPrefill, when set, makes Prefill's attention FlashPrefill V2
	// with these parameters (attention_flashprefill.go); nil is dense. A
	// negative Alpha takes the architecture's (FlashPrefillAlpha).
	FlashPrefill *kernels.FlashPrefill
	// Device, when set, runs what has a device path on that GPU
	// (device.go); StrictDevice refuses to run any other op on the CPU.
	Device       *hip.Device
	StrictDevice bool
}

// layerStack is one architecture's transformer blocks: forward runs them
// with o over the pass's residual stream (actX) in place.
type layerStack interface {
	forward(o ops)
}

// Model is a loaded GGUF model with its KV cache and pass buffers. It is
// not safe for concurrent use.
type Model struct {
	path string
	file *gguf.File
	tok  *tokenizer.Tokenizer
	hp   *hparams
	opt  Options // resolved
	ub   int     // tokens per pass: min(batch, ubatch)
	eog  []int32 // tokens that end generation
	info ModelInfo

	tokEmbd   *kernels.Matrix // (n_embd, n_vocab)
	outNorm   []float32       // (n_embd)
	output    *kernels.Matrix // (n_embd, n_vocab); token_embd when tied
	outBias   []float32       // (n_vocab), optional; loaded by qwen2.go
	ropeFreqs []float32       // (n_rot/2) RoPE frequency divisors, optional; loaded by llama.go
	layers    layerStack

	pool *kernels.Pool
	kv   *kvCache
	rs   *recurrentState // the GDN layers' conv and SSM states (hybrid archs, qwen35.go), beside the KV cache
	p    *pass
	head headState
	dev  *deviceState // nil on the CPU backend

	blocks AttentionBlocks // of the last Prefill
}

// Load opens a GGUF model and prepares it to run with opt.
func Load(path string, opt Options) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	m, err := load(f, opt)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("engine: %s: %w", path, err)
	}
	return m, nil
}

func load(f *gguf.File, opt Options) (*Model, error) {
	if err := resolve(&opt); err != nil {
		return nil, err
	}
	hp, err := readHParams(f)
	if err != nil {
		return nil, err
	}
	m := &Model{path: f.Path, file: f, hp: hp, opt: opt, ub: min(opt.BatchSize, opt.UBatchSize)}
	if err := m.resolveFlashPrefill(); err != nil {
		return nil, err
	}
	if m.tok, err = tokenizer.FromGGUF(f); err != nil {
		return nil, err
	}
	if m.tok.VocabSize() != hp.nVocab {
		return nil, fmt.Errorf("%w: tokenizer has %d tokens, tokenizer.ggml.tokens %d", ErrModel, m.tok.VocabSize(), hp.nVocab)
	}
	if eos := m.tok.EOS(); eos >= 0 {
		m.eog = append(m.eog, eos)
	}
	for _, key := range []string{"eot_token_id", "eom_token_id"} {
		if id, ok := f.Int("tokenizer.ggml." + key); ok && id >= 0 && id < int64(hp.nVocab) {
			m.eog = append(m.eog, int32(id))
		}
	}

	ld := newLoader(f)
	m.tokEmbd = ld.matrix("token_embd.weight", hp.nEmbd, hp.nVocab)
	m.outNorm = ld.vector("output_norm.weight", hp.nEmbd)
	m.output = ld.optMatrix("output.weight", hp.nEmbd, hp.nVocab)
	if m.output == nil {
		m.output = m.tokEmbd
	}
	switch hp.arch { // the architecture's file loads its blocks and what else it adds
	case "llama":
		m.layers = loadLlama(m, ld)
	case "qwen2":
		m.layers = loadQwen2(m, ld)
	case "qwen3":
		m.layers = loadQwen3(m, ld)
	case "qwen35", "qwen35moe", "qwen3next":
		m.layers = loadQwen35(m, ld)
	}
	if err := ld.finish(hp); err != nil {
		return nil, err
	}
	if m.tokEmbd != nil && !kernels.CanDequantize(m.tokEmbd.Type) {
		return nil, fmt.Errorf("%w: token_embd.weight type %v", ErrUnsupported, m.tokEmbd.Type)
	}

	m.info = ModelInfo{
		Path:         f.Path,
		Size:         f.FileSize,
		Architecture: hp.arch,
		LayerPattern: hp.layout(f).Pattern,
		TypeCounts:   typeCounts(f),
		VocabSize:    hp.nVocab,
		HiddenSize:   hp.nEmbd,
		AddBOS:       m.tok.AddBOS(),
		BOS:          m.tok.BOS(),

		TokenizerSHA256: m.tok.Hash(),
	}
	if err := checkMemory(hp, opt, m.ub, sysmem.Available()); err != nil {
		return nil, err
	}
	if m.kv, err = newKVCache(hp, opt.KVType, opt.KVLen); err != nil {
		return nil, err
	}
	m.pool = kernels.NewPool(opt.Threads)
	m.p = newPass(m)
	if opt.Device != nil {
		if m.dev, err = newDeviceState(m, opt.Device, opt.StrictDevice); err != nil {
			m.pool.Close()
			return nil, err
		}
	}
	return m, nil
}

// resolve fills Options defaults and checks the rest.
func resolve(o *Options) error {
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.UBatchSize == 0 {
		o.UBatchSize = DefaultUBatchSize
	}
	if o.KVLen == 0 {
		o.KVLen = DefaultKVLen
	}
	const maxLen = 1 << 22
	switch {
	case o.Threads > 1024:
		return fmt.Errorf("%w: %d threads", ErrInput, o.Threads)
	case o.BatchSize < 1 || o.BatchSize > maxLen:
		return fmt.Errorf("%w: batch size %d out of range [1,%d]", ErrInput, o.BatchSize, maxLen)
	case o.UBatchSize < 1 || o.UBatchSize > maxLen:
		return fmt.Errorf("%w: ubatch size %d out of range [1,%d]", ErrInput, o.UBatchSize, maxLen)
	case o.KVLen < 1 || o.KVLen > maxLen:
		return fmt.Errorf("%w: kv-len %d out of range [1,%d]", ErrInput, o.KVLen, maxLen)
	}
	switch o.KVType {
	case kernels.F32, kernels.F16, kernels.BF16, kernels.Q8_0:
	default:
		return fmt.Errorf("%w: KV cache type %v (want f32, f16, bf16 or q8_0)", ErrUnsupported, o.KVType)
	}
	return nil
}

// Close releases the worker pool and the file mapping. The model must not
// be used afterwards.
func (m *Model) Close() error {
	if m == nil || m.file == nil {
		return nil
	}
	m.pool.Close()
	m.dev.close()
	m.head = headState{} // the prepacked head is heap, not mapped
	err := m.file.Close()
	m.file = nil
	return err
}

// kernelConfig is the kernel variant of every op this model runs: the
// matmul of each weight type in the file and of the attention products
// (the KV cache type; q8_0 values are expanded to f32), and the other ops.
func (m *Model) kernelConfig() map[string]string {
	all := m.opt.Kernels.Config()
	out := map[string]string{}
	for op, v := range all {
		if !strings.HasPrefix(op, "matmul.") {
			out[op] = v
		}
	}
	used := []kernels.Type{m.opt.KVType}
	if m.opt.KVType == kernels.Q8_0 {
		used = append(used, kernels.F32)
	}
	for name := range m.info.TypeCounts {
		if t, err := kernels.ParseType(name); err == nil {
			used = append(used, t)
		}
	}
	for _, t := range used {
		if op := kernels.MatMulOp(t); all[op] != "" {
			out[op] = all[op]
		}
	}
	return out
}

// Info describes the loaded model.
func (m *Model) Info() ModelInfo { return m.info }

// Tokenizer returns the model's tokenizer.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// AttentionScale is the attention logit scale, 1/sqrt(head dim) in float32
// as llama.cpp computes it.
func (m *Model) AttentionScale() float32 { return attnScale(m.hp.headDim) }

func attnScale(hd int) float32 { return 1 / float32(math.Sqrt(float64(hd))) }

// resolveFlashPrefill copies the FlashPrefill parameters, fills in the
// architecture's alpha and checks that Prefill can run them: windows of
// up to kv-len tokens, passes that start on block boundaries.
func (m *Model) resolveFlashPrefill() error {
	if m.opt.FlashPrefill == nil {
		return nil
	}
	f := *m.opt.FlashPrefill
	if f.Alpha < 0 {
		f.Alpha = FlashPrefillAlpha(m.hp.arch)
	}
	if err := f.Validate(m.opt.KVLen); err != nil {
		return fmt.Errorf("%w: %w", ErrInput, err)
	}
	if m.ub%f.BlockSize != 0 && m.ub < m.opt.KVLen {
		return fmt.Errorf("%w: FlashPrefill needs passes of whole blocks: %d tokens per pass (min of batch and ubatch size) is not a multiple of the block size %d, nor does one pass hold the kv-len %d",
			ErrInput, m.ub, f.BlockSize, m.opt.KVLen)
	}
	m.opt.FlashPrefill = &f
	return nil
}

// Config describes how the engine runs, for the report.
func (m *Model) Config() Config {
	c := Config{
		DeviceArch:            "cpu",
		PrefillAttention:      "dense",
		PrefillAttentionScale: float64(m.AttentionScale()),
		KVCacheDType:          strings.ToLower(m.opt.KVType.String()),
		KVCapacity:            m.opt.KVLen,
		BatchSize:             m.opt.BatchSize,
		UBatchSize:            m.opt.UBatchSize,
		HeadRows:              HeadRows,
		CPUFallbackAllowed:    true,
		Threads:               m.opt.Threads,
		Backend:               "cpu",
		Kernels:               m.kernelConfig(),
		CPUFeatures:           kernels.CPU().String(),
		CPULevel:              kernels.CPULevel(),
		Model:                 m.info,
	}
	m.dev.config(&c)
	if m.opt.FlashPrefill != nil {
		f := *m.opt.FlashPrefill // a copy: the report's, not the engine's
		c.PrefillAttention, c.PrefillAttentionScale, c.FlashPrefill = "flashprefill-v2", f.Alpha, &f
	}
	return c
}
