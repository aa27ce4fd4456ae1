//go:build !purego

package kernels

// Declaration of the AVX2 min-panel kernel (generated into simd_amd64.s
// by gen_simd.go; its twin is q8PanelGoMin in panel_min.go).

//go:noescape
func q8PanelAVX2m(t *qTile)
