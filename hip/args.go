package hip

import (
	"math"
	"runtime"
	"unsafe"
)

// Args packs a launch's kernel parameters as cuLaunchKernel and
// hipModuleLaunchKernel take them: an array of pointers, entry i pointing
// at parameter i. Each parameter gets its own 8-byte-aligned slots in one
// []uint64 slab (values are little-endian in the low bytes, so a 4-byte int
// reads correctly through its pointer); the runtime copies the values at
// launch, so an Args may be reset and reused once Launch returns. The
// slab and the pointer array are pinned for the call (Go memory handed to
// C must hold no unpinned Go pointers).
type Args struct {
	slab  []uint64
	start []int // slot index of each parameter
	size  []int // bytes of each parameter
	ptrs  []unsafe.Pointer
}

// Reset empties a for the next launch, keeping its memory.
func (a *Args) Reset() { a.slab, a.start, a.size = a.slab[:0], a.start[:0], a.size[:0] }

// Len is the number of parameters.
func (a *Args) Len() int { return len(a.start) }

func (a *Args) add(v uint64, size int) *Args {
	a.start = append(a.start, len(a.slab))
	a.size = append(a.size, size)
	a.slab = append(a.slab, v)
	return a
}

// Ptr adds a device pointer (a Buffer's address plus a byte offset).
func (a *Args) Ptr(b Buffer, off int) *Args { return a.add(uint64(b.ptr)+uint64(off), 8) }

// I32 adds a C int.
func (a *Args) I32(v int32) *Args { return a.add(uint64(uint32(v)), 4) }

// U32 adds a C unsigned.
func (a *Args) U32(v uint32) *Args { return a.add(uint64(v), 4) }

// F32 adds a float.
func (a *Args) F32(v float32) *Args { return a.add(uint64(math.Float32bits(v)), 4) }

// F64 adds a double.
func (a *Args) F64(v float64) *Args { return a.add(math.Float64bits(v), 8) }

// U64 adds a 64-bit integer (size_t, long long).
func (a *Args) U64(v uint64) *Args { return a.add(v, 8) }

// Bytes adds a struct passed by value (e.g. a 128-byte CUtensorMap); its
// slots are 8-byte aligned, which suffices for every such struct.
func (a *Args) Bytes(b []byte) *Args {
	a.start = append(a.start, len(a.slab))
	a.size = append(a.size, len(b))
	n := (len(b) + 7) / 8
	for i := range n {
		var w uint64
		for j := 0; j < 8 && i*8+j < len(b); j++ {
			w |= uint64(b[i*8+j]) << (8 * j)
		}
		a.slab = append(a.slab, w)
	}
	if n == 0 {
		a.slab = append(a.slab, 0)
	}
	return a
}

// params builds the pointer array, pinning what C will read; the caller
// unpins after the launch call returns. It returns nil for no parameters.
func (a *Args) params(pin *runtime.Pinner) unsafe.Pointer {
	if len(a.start) == 0 {
		return nil
	}
	a.ptrs = a.ptrs[:0]
	for _, s := range a.start {
		a.ptrs = append(a.ptrs, unsafe.Pointer(&a.slab[s]))
	}
	pin.Pin(&a.slab[0])
	pin.Pin(&a.ptrs[0])
	return unsafe.Pointer(&a.ptrs[0])
}
