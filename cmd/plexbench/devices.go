package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"plexbench/hip"
)

// runDevices lists each GPU runtime: what was found, the devices it
// reports, or why it is not usable. It exits non-zero when no device of
// any runtime can run plexbench's kernels.
func (c *cli) devicesCmd() *cobra.Command {
	cmd, _ := c.command("devices", "", "list the GPU runtimes and devices found (CUDA, HIP), or why none")
	return c.action(cmd, func(_ []string) int {
		usable := 0
		for _, k := range []hip.Kind{hip.CUDA, hip.HIP} {
			st := hip.Probe(k, hip.Config{CacheDir: "-"})
			printStatus(c.stdout, st)
			if st.Err == nil {
				for _, d := range st.Devices {
					if d.Err == nil {
						usable++
					}
				}
			}
		}
		if usable == 0 {
			fmt.Fprintln(c.stderr, "plexbench: no usable GPU (use --backend cpu)")
			return 1
		}
		return 0
	})
}

// printStatus writes one line for the runtime, then one per device.
func printStatus(w io.Writer, st hip.Status) {
	var found []string
	if st.Library != "" {
		found = append(found, st.Library)
	}
	if st.Driver > 0 {
		found = append(found, "driver "+strconv.Itoa(st.Driver))
	}
	if st.Compiler != "" {
		found = append(found, st.Compiler)
	}
	line := st.Kind.String() + ": "
	switch {
	case st.Err != nil:
		line = st.Err.Error()
		if len(found) > 0 {
			line += "; found " + strings.Join(found, ", ")
		}
		if st.Kind == hip.HIP && errors.Is(st.Err, hip.ErrNoDevice) {
			if archs := hip.KFDArchs(hip.KFDTopology); len(archs) > 0 {
				line += "; the kfd topology lists " + strings.Join(archs, ", ")
			}
		}
	default:
		line += strings.Join(found, ", ") + fmt.Sprintf(": %d device(s)", len(st.Devices))
	}
	fmt.Fprintln(w, line)
	for _, d := range st.Devices {
		if d.Name == "" && d.Err != nil {
			fmt.Fprintf(w, "  %s:%d  %v\n", st.Kind, d.Ordinal, d.Err)
			continue
		}
		fmt.Fprintf(w, "  %s:%d  %s  %q  %d units, warp %d, %.1f GiB", st.Kind, d.Ordinal, d.Target, d.Name, d.Units, d.Warp, float64(d.TotalMem)/(1<<30))
		if d.Err != nil {
			fmt.Fprintf(w, "  unusable: %v", d.Err)
		}
		fmt.Fprintln(w)
	}
}
