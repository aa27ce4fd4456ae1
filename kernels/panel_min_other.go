//go:build purego || !amd64

package kernels

func q8PanelAVX2m(*qTile) { noAsm() }
