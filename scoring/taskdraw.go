package scoring

// taskdraw.go owns the random task selection of llama-perplexity's
// multiple-choice modes: std::mt19937 seeded with 1 and, for HellaSwag,
// std::uniform_int_distribution<size_t> as libstdc++ implements it, so
// plexbench scores the same tasks in the same order.

import (
	"fmt"
	"math"
)

// mt19937 is the 32-bit Mersenne Twister of C++'s std::mt19937.
type mt19937 struct {
	state [624]uint32
	i     int // next state word to temper; 624: regenerate first
}

func newMT19937(seed uint32) *mt19937 {
	g := &mt19937{i: 624}
	g.state[0] = seed
	for i := 1; i < 624; i++ {
		prev := g.state[i-1]
		g.state[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	return g
}

// next is the engine's operator(): the next tempered word.
func (g *mt19937) next() uint32 {
	if g.i >= 624 {
		g.twist()
	}
	y := g.state[g.i]
	g.i++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	return y ^ (y >> 18)
}

// twist regenerates the 624 state words.
func (g *mt19937) twist() {
	for i := range 624 {
		y := g.state[i]&0x80000000 | g.state[(i+1)%624]&0x7fffffff
		v := g.state[(i+397)%624] ^ (y >> 1)
		if y&1 != 0 {
			v ^= 0x9908b0df
		}
		g.state[i] = v
	}
	g.i = 0
}

// uniform draws from [0, n) as libstdc++'s uniform_int_distribution does
// (GCC 11 and later) for a range below 2^32 and a 32-bit engine: Lemire's
// multiply-and-shift, redrawing while the low word of the product falls
// under 2^32 mod n. It always consumes at least one draw, even for n == 1.
// Older libstdc++, libc++ and MSVC draw otherwise.
func (g *mt19937) uniform(n uint32) uint32 {
	p := uint64(g.next()) * uint64(n)
	if low := uint32(p); low < n {
		threshold := -n % n
		for low < threshold {
			p = uint64(g.next()) * uint64(n)
			low = uint32(p)
		}
	}
	return uint32(p >> 32)
}

// HellaSwagOrder is the order in which llama-perplexity scores count of a
// file's total HellaSwag tasks (count is capped at total): it always draws,
// even when every task is scored, each task uniformly from those not yet
// drawn (without replacement; the drawn task is erased from the list, the
// rest keep their order), with mt19937(1). The result holds task indices
// in the file.
func HellaSwagOrder(total, count int) ([]int, error) {
	if total < 0 || uint64(total) >= 1<<32 {
		return nil, fmt.Errorf("%d tasks: llama.cpp's draw needs a count below 2^32", total)
	}
	count = max(0, min(count, total))
	left := make([]int, total)
	for i := range left {
		left[i] = i
	}
	g := newMT19937(1)
	order := make([]int, count)
	for i := range order {
		j := int(g.uniform(uint32(len(left))))
		order[i] = left[j]
		left = append(left[:j], left[j+1:]...)
	}
	return order, nil
}

// ChoiceOrder is the order in which llama-perplexity's Winogrande and
// multiple-choice modes score count of a file's total tasks: every task
// in file order when count is 0 or at least total; else count draws with
// mt19937(1), each j = int(scale·rng()·left) in float arithmetic (scale =
// 1/(1 + (float)max), so 2^-32), taking left[j] and moving the last task
// left into its place. The result holds task indices in the file.
func ChoiceOrder(total, count int) ([]int, error) {
	if total < 0 || total > math.MaxInt32 {
		return nil, fmt.Errorf("%d tasks: llama.cpp's draw indexes them with an int", total)
	}
	order := make([]int, total)
	for i := range order {
		order[i] = i
	}
	if count <= 0 || count >= total {
		return order, nil
	}
	const scale = float32(1.0 / (1 << 32))
	g, left := newMT19937(1), order
	out := make([]int, count)
	for i := range out {
		j := int(float32(scale*float32(g.next())) * float32(len(left)))
		// A draw within 2^-25 of 1 rounds j up to len(left), past llama.cpp's
		// vector (undefined there); it takes the last task left here.
		j = min(j, len(left)-1)
		out[i] = left[j]
		left[j] = left[len(left)-1]
		left = left[:len(left)-1]
	}
	return out, nil
}
