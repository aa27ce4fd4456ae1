package engine

// check.go owns Check: what Load would refuse of a model and options,
// found from the file's header and hyper-parameters alone (no weights
// read, no buffers allocated), so that a caller can refuse a run — both
// sides of an A/B — before anything is scored.

import (
	"fmt"

	"plexbench/engine/gguf"
	"plexbench/internal/sysmem"
	"plexbench/kernels"
)

// Checked is what Check read of a model.
type Checked struct {
	Architecture string
	// CtxTrain is the context the model was trained with
	// ({arch}.context_length, llama.cpp's n_ctx_train).
	CtxTrain int
	HeadDim  int
}

// Check is Load's refusals of the model at path with opt that need no
// weights: the options, the header and hyper-parameters, the KV cache
// type against the head size, the KV cache's and the passes' memory and
// FlashPrefill's parameters; the errors read as Load's.
func Check(path string, opt Options) (Checked, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return Checked{}, fmt.Errorf("engine: %w", err)
	}
	defer f.Close()
	c, err := check(f, opt)
	if err != nil {
		return c, fmt.Errorf("engine: %s: %w", path, err)
	}
	return c, nil
}

func check(f *gguf.File, opt Options) (Checked, error) {
	if err := resolve(&opt); err != nil {
		return Checked{}, err
	}
	hp, err := readHParams(f)
	if err != nil {
		return Checked{}, err
	}
	c := Checked{Architecture: hp.arch, CtxTrain: hp.nCtxTrain, HeadDim: hp.headDim}
	m := &Model{hp: hp, opt: opt, ub: min(opt.BatchSize, opt.UBatchSize)}
	if err := m.resolveFlashPrefill(); err != nil {
		return c, err
	}
	if err := checkMemory(hp, opt, m.ub, sysmem.Available()); err != nil {
		return c, err
	}
	return c, checkKVCache(hp, opt.KVType, opt.KVLen)
}

// checkKVCache refuses a KV cache newKVCache cannot make: a q8_0 cache of
// heads that are not whole blocks, or one too large.
func checkKVCache(hp *hparams, typ kernels.Type, kvLen int) error {
	if typ == kernels.Q8_0 && hp.headDim%typ.BlockSize() != 0 {
		return fmt.Errorf("%w: a q8_0 KV cache needs a head dimension that is a multiple of 32, have %d",
			ErrUnsupported, hp.headDim)
	}
	if kvCacheBytes(hp, typ, kvLen) > maxKVBytes {
		return fmt.Errorf("%w: a KV cache of %d positions would take more than %d GiB: lower --kv-len", ErrInput, kvLen, maxKVBytes>>30)
	}
	return nil
}
