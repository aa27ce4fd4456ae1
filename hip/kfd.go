package hip

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// KFDTopology is where the amdgpu driver lists its nodes.
const KFDTopology = "/sys/devices/virtual/kfd/kfd/topology/nodes"

// gfxName turns a KFD gfx_target_version (major·10000 + minor·100 +
// stepping) into an ISA name as llvm's amdgpu-arch does: 120001 → gfx1201,
// 90010 → gfx90a. 0 (a CPU node) gives "".
func gfxName(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("gfx%d%d%x", (v/10000)%100, (v/100)%100, v%100)
}

// KFDArchs lists the GPU nodes' ISA names under a KFD topology directory,
// without loading any library: a cheap "is there an AMD GPU" probe.
func KFDArchs(topology string) []string {
	nodes, _ := filepath.Glob(filepath.Join(topology, "*", "properties"))
	var out []string
	for _, p := range nodes {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), " ")
			if !ok || k != "gfx_target_version" {
				continue
			}
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			if name := gfxName(n); name != "" {
				out = append(out, name)
			}
		}
		f.Close()
	}
	return out
}

// loadedPath finds the file the loader mapped for a bare SONAME, from
// /proc/self/maps ("" when not found).
func loadedPath(soname string) string {
	if strings.ContainsRune(soname, '/') {
		return soname
	}
	data, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	stem := soname
	if i := strings.Index(stem, ".so"); i >= 0 {
		stem = stem[:i+3]
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		if p := f[len(f)-1]; strings.HasPrefix(filepath.Base(p), stem) {
			return p
		}
	}
	return ""
}
