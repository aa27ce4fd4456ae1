//go:build purego || !amd64

package kernels

// This file stands in for gdn_amd64.go where there is no assembly: the
// registry never binds deltaRuleAVX2 here (haveAsm is false).

func gdnDecayDot(s, k, u *float32, e float32, dk, dv int) {
	panic("kernels: gdn=avx2 without assembly")
}

func gdnUpdateDot(s, k, q, d, o *float32, dk, dv int) {
	panic("kernels: gdn=avx2 without assembly")
}
