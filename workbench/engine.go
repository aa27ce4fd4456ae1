package workbench

// engine.go owns what a profile's engine settings become: the model file,
// engine.Options (threads, batches, KV cache length and type, kernels,
// FlashPrefill) and, for a GPU backend, the device it names.

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"plexbench/engine"
	"plexbench/hip"
	"plexbench/kernels"
	"plexbench/profiles"
	"plexbench/scoring"
	"plexbench/workbench/demo"
)

// modelPath is the model file p names, or the embedded demo's.
func modelPath(p profiles.Profile) (string, error) {
	if p.Sweep != nil {
		// Its model is the sweep's to set, run by run (Sweep clears the table).
		what := "profile " + p.Name
		if p.Source != "" {
			what = p.Source
		}
		return "", fmt.Errorf("%s holds a [sweep] table: run it with `plexbench sweep --profile` or `plexbench tui --profile`", what)
	}
	if p.Model == "" {
		return demo.ModelPath()
	}
	if _, err := os.Stat(p.Model); err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	return p.Model, nil
}

// loadEngine opens the model at path with p's engine settings; for a GPU
// backend also the device, whose runtime the caller closes after the
// model (nil on the CPU).
func loadEngine(p profiles.Profile, path string) (*engine.Model, *hip.Runtime, error) {
	opts, err := Options(p)
	if err != nil {
		return nil, nil, err
	}
	if p.Backend == "" || p.Backend == "cpu" {
		m, err := engine.Load(path, opts)
		return m, nil, err
	}
	rt, d, err := OpenDevice(p.Backend, p.Device)
	if err != nil {
		return nil, nil, err
	}
	opts.Device = d
	opts.StrictDevice = p.StrictDeviceKernels || os.Getenv("LSE_REQUIRE_DEVICE_KERNELS") == "1"
	m, err := engine.Load(path, opts)
	if err != nil {
		rt.Close()
		return nil, nil, err
	}
	return m, rt, nil
}

// Options is the engine's options for p.
func Options(p profiles.Profile) (engine.Options, error) {
	kvType, err := kvType(p.KVCacheDType)
	if err != nil {
		return engine.Options{}, err
	}
	ks, err := kernels.ParseKernels(profiles.FormatKernels(p.Kernels))
	if err != nil {
		return engine.Options{}, err
	}
	kvLen := p.KVLen
	if kvLen == 0 {
		kvLen = max(p.Ctx, scoring.DefaultCtx)
	}
	return engine.Options{
		Threads: p.Threads, BatchSize: p.BatchSize, UBatchSize: p.UBatchSize,
		KVLen: kvLen, KVType: kvType, Kernels: ks, FlashPrefill: flashPrefill(p),
	}, nil
}

// flashPrefill is the engine's FlashPrefill setting for p: nil for dense
// prefill attention; an unset alpha is the architecture's (negative).
func flashPrefill(p profiles.Profile) *kernels.FlashPrefill {
	if p.PrefillAttention != profiles.FlashPrefillV2 {
		return nil
	}
	fp := p.FlashPrefill
	f := &kernels.FlashPrefill{BlockSize: fp.BlockSize, Alpha: -1, SinkBlocks: fp.SinkBlocks,
		Window: fp.Window, LastNFull: fp.LastNFull, MinBudget: fp.MinBudget}
	if fp.Alpha != nil {
		f.Alpha = *fp.Alpha
	}
	return f
}

// kvType maps a --kv-cache-dtype value to a tensor type.
func kvType(s string) (kernels.Type, error) {
	switch strings.ToLower(s) {
	case "f32":
		return kernels.F32, nil
	case "", "f16":
		return kernels.F16, nil
	case "bf16":
		return kernels.BF16, nil
	case "q8_0":
		return kernels.Q8_0, nil
	}
	return 0, fmt.Errorf("--kv-cache-dtype %q: want f32, f16, bf16 or q8_0", s)
}

// OpenDevice opens the device a GPU backend names (ordinal "" = 0) and
// checks that kernels can be compiled for it.
func OpenDevice(backend, device string) (*hip.Runtime, *hip.Device, error) {
	kind, err := hip.ParseKind(backend)
	if err != nil {
		return nil, nil, err
	}
	n := 0
	if device != "" {
		if n, err = strconv.Atoi(device); err != nil || n < 0 {
			return nil, nil, fmt.Errorf("--device %q: want a device ordinal (plexbench devices lists them)", device)
		}
	}
	rt, err := hip.Open(kind, hip.Config{})
	if err != nil {
		return nil, nil, err // hip errors name the runtime
	}
	d, err := rt.Device(n)
	if err == nil && rt.Compiler == nil {
		err = rt.CompilerErr
	}
	if err == nil {
		err = hip.CheckArch(kind, d.Arch, rt.Compiler.Version)
	}
	if err != nil {
		rt.Close()
		return nil, nil, err // hip errors name the runtime
	}
	return rt, d, nil
}
