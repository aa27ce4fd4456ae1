// Package basetest damages base files for the tests of the checks that
// refuse them (scoring's and the CLI's): it edits the bytes as the
// formats lay them out (spec: the plexbench top-k base; llama.cpp's
// --kl-divergence-base), so that only those checks can find the damage.
// It imports nothing of plexbench, so scoring's own tests can use it.
package basetest

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"os"
	"testing"
)

// EditRecord rewrites record i of the plexbench base at path through edit
// and makes its checksum match again: damage only the record checks find.
// A record is its NLL (float64) and k (id int32, log-probability float32)
// pairs, after a 100-byte header, the metadata and the token ids.
func EditRecord(t testing.TB, path string, i int, edit func(nll *float64, ids []int32, lp []float32)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	k, tokens, meta := int(le.Uint32(raw[28:])), int(le.Uint64(raw[32:])), int(le.Uint32(raw[96:]))
	rec := raw[100+meta+4*tokens+i*(8+8*k):]
	nll := math.Float64frombits(le.Uint64(rec))
	ids, lp := make([]int32, k), make([]float32, k)
	for j := range k {
		ids[j], lp[j] = int32(le.Uint32(rec[8+8*j:])), math.Float32frombits(le.Uint32(rec[12+8*j:]))
	}
	edit(&nll, ids, lp)
	le.PutUint64(rec, math.Float64bits(nll))
	for j := range k {
		le.PutUint32(rec[8+8*j:], uint32(ids[j]))
		le.PutUint32(rec[12+8*j:], math.Float32bits(lp[j]))
	}
	sum := sha256.Sum256(raw[:len(raw)-sha256.Size])
	copy(raw[len(raw)-sha256.Size:], sum[:])
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// NaNLlamaRow sets row i of the llama.cpp base at path to what
// llama-perplexity writes for NaN logits: a NaN scale and minimum. A row
// is the scale and minimum (float32) and the vocabulary's 16-bit codes,
// padded to whole words, after a 20-byte header and the token ids.
func NaNLlamaRow(t testing.TB, path string, i int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	c, v, n := int(le.Uint32(raw[8:])), int(le.Uint32(raw[12:])), int(le.Uint32(raw[16:]))
	row := raw[20+4*c*n+i*2*(2*((v+1)/2)+4):]
	le.PutUint32(row, math.Float32bits(float32(math.NaN())))
	le.PutUint32(row[4:], math.Float32bits(float32(math.NaN())))
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
