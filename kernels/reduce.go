package kernels

// reduce.go owns the reference logit-row reductions that perplexity scoring
// runs after the LM head: Pick (max, argmax, Σ exp, and the logits of a few
// requested ids) and TopK (the row's k largest logits). They keep nothing
// vocabulary-sized, so a device backend can mirror them and return only a
// few numbers per row. KernelSet.Pick and KernelSet.TopK run the variant
// a run selected for the "head" op: "go" is the reference, "avx512" a
// vector max/argmax scan, a vector exp summed in float64 lanes, and a
// thresholded top-k scan.

import "math"

// Pick reduces one logit row. It returns the row's maximum (f32), the first
// index attaining it, and Σ_j f64(expf(row[j] − max)) with the subtraction
// and the exponential in f32 and the sum in f64 in ascending j, as
// llama-perplexity computes it. It also sets picked[i] = row[ids[i]]; every
// id must lie in [0, len(row)) and len(picked) must be at least len(ids).
// An empty row returns (−Inf, −1, 0).
func Pick(row []float32, ids []int32, picked []float32) (max float32, argmax int32, sumExp float64) {
	for i, id := range ids {
		picked[i] = row[id]
	}
	if len(row) == 0 {
		return float32(math.Inf(-1)), -1, 0
	}
	max = row[0]
	for j, v := range row[1:] {
		if v > max { // strict: the first maximum wins
			max, argmax = v, int32(j+1)
		}
	}
	for _, v := range row {
		sumExp += float64(expf(v - max))
	}
	return max, argmax, sumExp
}

// expf is single-precision exp, within an ulp of C's expf.
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// Pick is Pick with the set's head variant. "avx512" returns the same max,
// argmax and picked logits; its Σ exp uses the vector exp (within 2 ulp per
// term, as ggml's SIMD softmax) with sixteen float64 lane sums, so it
// agrees with the reference to about 1e-7 relative. Rows whose sum comes
// out NaN (a NaN logit, an infinite max) go through the reference, so
// their conventions do not depend on the variant.
func (ks KernelSet) Pick(row []float32, ids []int32, picked []float32) (max float32, argmax int32, sumExp float64) {
	pick := ks.table().pick
	if pick == nil || len(row) == 0 {
		return Pick(row, ids, picked)
	}
	for i, id := range ids {
		picked[i] = row[id]
	}
	max, argmax, sumExp = pick(row)
	if sumExp != sumExp {
		return Pick(row, ids, picked)
	}
	return max, argmax, sumExp
}

// pickMaxSumTwin is the avx512 kernels' Go twin, operation for operation:
// the first index of the largest non-NaN logit (0 when there is none),
// then Σ expGo(row[j] − max) in the vector's lane order (see softmaxTwin).
// len(row) ≥ 1.
func pickMaxSumTwin(row []float32) (float32, int32, float64) {
	mx, am := float32(math.Inf(-1)), 0
	for j, v := range row {
		if v > mx {
			mx, am = v, j
		}
	}
	var acc [2][8]float64
	for j, v := range row {
		l := j % 16
		acc[l/8][l%8] += float64(expGo(v - mx))
	}
	var s [8]float64
	for l := range 8 {
		s[l] = acc[0][l] + acc[1][l]
	}
	for l := range 4 {
		s[l] += s[l+4]
	}
	return mx, int32(am), (s[0] + s[2]) + (s[1] + s[3])
}

// TopK is TopK with the set's head variant; both give identical results.
// "avx512" scans for logits above the heap's current worst with a plain
// compare and touches the heap only for those (a few hundred of a 150k
// row), where the reference ranks every logit against the heap's root.
func (ks KernelSet) TopK(row []float32, k int, ids []int32, logits []float32) {
	ks.table().topK(row, k, ids, logits)
}

// TopK writes the row's k largest logits in descending order to logits[:k]
// and their indices to ids[:k]; equal logits put the lower index first.
// k is clamped to len(row); ids and logits must hold k entries. It runs in
// O(len(row)·log k) using ids/logits as a bounded min-heap, and allocates
// nothing. NaN logits are never selected unless fewer than k others exist.
func TopK(row []float32, k int, ids []int32, logits []float32) {
	if k > len(row) {
		k = len(row)
	}
	if k <= 0 {
		return
	}
	ids, logits = ids[:k], logits[:k]
	h := topHeap{ids: ids, logits: logits}
	for j, v := range row {
		id := int32(j)
		if h.n < k {
			h.push(id, v)
			continue
		}
		if worse(logits[0], ids[0], v, id) {
			ids[0], logits[0] = id, v
			h.down(0)
		}
	}
	h.sortBestFirst()
}

// topKThreshold is TopK with a threshold: the scan is ascending, so a logit
// equal to the root's ranks below it (higher index), and only a strictly
// larger one can enter. While the root is NaN every logit takes the full
// comparison.
func topKThreshold(row []float32, k int, ids []int32, logits []float32) {
	if k > len(row) {
		k = len(row)
	}
	if k <= 0 {
		return
	}
	ids, logits = ids[:k], logits[:k]
	h := topHeap{ids: ids, logits: logits}
	for j, v := range row[:k] {
		h.push(int32(j), v)
	}
	for j := k; j < len(row); j++ {
		if thr := logits[0]; thr == thr {
			// Skip to the next logit above the threshold.
			rest := row[j:]
			i := 0
			for i < len(rest) && !(rest[i] > thr) {
				i++
			}
			if j += i; j == len(row) {
				break
			}
		}
		if v := row[j]; worse(logits[0], ids[0], v, int32(j)) {
			ids[0], logits[0] = int32(j), v
			h.down(0)
		}
	}
	h.sortBestFirst()
}

// sortBestFirst heap-sorts the kept pairs: repeatedly moving the worst to
// the end leaves the best first.
func (h *topHeap) sortBestFirst() {
	for end := h.n - 1; end > 0; end-- {
		h.swap(0, end)
		h.n = end
		h.down(0)
	}
}

// worse reports whether (la, ia) ranks below (lb, ib): a lower logit, or an
// equal logit with a higher index. A NaN ranks below everything.
func worse(la float32, ia int32, lb float32, ib int32) bool {
	if la != la {
		return lb == lb || ia > ib
	}
	if lb != lb {
		return false
	}
	return la < lb || (la == lb && ia > ib)
}

// topHeap is a min-heap (worst pair at the root) over caller-owned slices.
type topHeap struct {
	ids    []int32
	logits []float32
	n      int
}

func (h *topHeap) push(id int32, v float32) {
	i := h.n
	h.ids[i], h.logits[i] = id, v
	h.n++
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h.logits[i], h.ids[i], h.logits[p], h.ids[p]) {
			break
		}
		h.swap(i, p)
		i = p
	}
}

func (h *topHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= h.n {
			return
		}
		m := l
		if r := l + 1; r < h.n && worse(h.logits[r], h.ids[r], h.logits[l], h.ids[l]) {
			m = r
		}
		if !worse(h.logits[m], h.ids[m], h.logits[i], h.ids[i]) {
			return
		}
		h.swap(i, m)
		i = m
	}
}

func (h *topHeap) swap(a, b int) {
	h.ids[a], h.ids[b] = h.ids[b], h.ids[a]
	h.logits[a], h.logits[b] = h.logits[b], h.logits[a]
}
