package tokenizer

// hash.go owns the tokenizer's identity: a hash of what Encode and Decode
// actually read, so that two models whose hashes agree tokenize every text
// alike and records can pin the tokenizer they ran.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"
)

// Hash is the hex SHA-256 of the tokenizer as built: its kind and
// pre-tokenizer, every token's text, score and attributes (after
// llama.cpp's fix-ups), the BOS, EOS and UNK ids, add_bos, add_eos and
// add_space_prefix, and the BPE merges in rank order. Metadata the
// tokenizer does not read (general.name aside from its fix-ups, unused
// special-id keys) is not in it.
func (t *Tokenizer) Hash() string { return t.hash }

// computeHash hashes t and the merges it was built from.
func (t *Tokenizer) computeHash(merges []string) string {
	h := sha256.New()
	str := func(s string) {
		writeUint(h, uint64(len(s)))
		h.Write([]byte(s))
	}
	str("plexbench tokenizer v1")
	str(t.kind)
	str(t.pre)
	writeUint(h, uint64(len(t.tokens)))
	for i, s := range t.tokens {
		str(s)
		writeUint(h, uint64(math.Float32bits(t.scores[i]))<<16|uint64(t.attrs[i]))
	}
	for _, id := range []int32{t.bos, t.eos, t.unk} {
		writeUint(h, uint64(uint32(id)))
	}
	flags := 0
	for i, on := range []bool{t.addBOS, t.addEOS, t.addSpacePrefix, t.ignoreMerges} {
		if on {
			flags |= 1 << i
		}
	}
	writeUint(h, uint64(flags))
	writeUint(h, uint64(len(merges)))
	for _, m := range merges {
		str(m)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeUint(h hash.Hash, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	h.Write(b[:])
}
