//go:build purego || !amd64

package kernels

// This file stands in for the amd64 assembly kernels on other targets and
// in purego builds: haveAsm is false, so the registry never selects them
// (variants.go), and these stubs exist only to keep the build whole.

const haveAsm = false

func noAsm() { panic("kernels: assembly kernel called in a build without assembly") }

func q8PanelVNNI(*qTile)     { noAsm() }
func q8PanelAVX2(*qTile)     { noAsm() }
func q8PanelAVX2s(*qTile)    { noAsm() }
func kMinVNNI32(*qTile)      { noAsm() }
func kCorrVNNI16(*qTile)     { noAsm() }
func kMinAVX2x32(*qTile)     { noAsm() }
func kCorrAVX2x16(*qTile)    { noAsm() }
func kMinAVX2x16w(*qTile)    { noAsm() }
func kCorrAVX2x16w(*qTile)   { noAsm() }
func kSgnAVX2x32w(*qTile)    { noAsm() }
func q8PanelAVX512m(*qTile)  { noAsm() }
func kMinAVX512x16w(*qTile)  { noAsm() }
func kCorrAVX512x16w(*qTile) { noAsm() }
func kSgnAVX512x32w(*qTile)  { noAsm() }

func quantActQ8AVX512(x []float32, dst []byte, bias int32) { quantActQ8Go(x, dst, bias) }
func quantQ8KAVX512(x []float32, dst []byte)               { quantizeQ8K(x, dst) }
func roundActAVX512(wt Type, x, dst []float32)             { roundActGo(wt, x, dst) }

func repackQ8_0AVX512(*byte, *[16]int32, int, *byte, uint32) { noAsm() }
func repackQ4_0AVX512(*byte, *[16]int32, int, *byte, uint32) { noAsm() }
func repackQ4_KAVX512(*byte, *[16]int32, int, *byte, uint32) { noAsm() }
func repackQ5_KAVX512(*byte, *[16]int32, int, *byte, uint32) { noAsm() }
func repackQ6_KAVX512(*byte, *[16]int32, int, *byte, uint32) { noAsm() }

func repackAVX512(*Matrix, int, q8Format, []byte) bool { return false }

func expAVX512(x, dst []float32) {
	for i, v := range x {
		dst[i] = expGo(v)
	}
}
func swigluAVX512(g, u []float32)                         { swigluTwin(g, u) }
func softmaxAVX512(s []float32, valid int, scale float32) { softmaxTwin(s, valid, scale) }

func fPanelAVX512x12(*fpTile)                        { noAsm() }
func fPanelAVX512x4(*fpTile)                         { noAsm() }
func fPanelAVX512x1(*fpTile)                         { noAsm() }
func repackFloatAVX512(*Matrix, int, []float32) bool { return false }
