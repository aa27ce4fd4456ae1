package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"plexbench/kernels"
)

// runKernels lists every op's kernel variants, what this CPU (or, with
// --cpu, a CPU with the features named) supports and which one a run picks
// by default.
func (c *cli) kernelsCmd() *cobra.Command {
	cmd, fs := c.command("kernels", "[--cpu FEATURES]", "list kernel variants and what this CPU supports")
	cpuFlag := fs.String("cpu", "", `show what a CPU with these features would run, e.g. "avx2 fma f16c" or "none" (features: `+
		kernels.FeatureNames()+`)`)
	return c.action(cmd, func(_ []string) int {
		f := kernels.CPU()
		if *cpuFlag != "" {
			var err error
			if f, err = kernels.ParseCPUFeatures(*cpuFlag); err != nil {
				fmt.Fprintf(c.stderr, "plexbench kernels: --cpu: %v\n", err)
				return 2
			}
			fmt.Fprintf(c.stdout, "CPU: %s (as given by --cpu; this machine: %s)", f, kernels.CPU())
		} else {
			fmt.Fprintf(c.stdout, "CPU: %s", f)
			if lvl := kernels.CPULevel(); lvl != "native" {
				fmt.Fprintf(c.stdout, " (%s=%s; detected: %s)", kernels.CPUEnv, lvl, kernels.CPUDetected())
			}
		}
		fmt.Fprint(c.stdout, "\n\n")
		w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "OP\tVARIANT\tSUPPORTED\tDEFAULT\tWHAT")
		for _, v := range kernels.KernelVariantsFor(f) {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", v.Op, v.Name, yesNo(v.Supported), mark(v.Default), v.Desc)
		}
		w.Flush()
		fmt.Fprintln(c.stdout, "\nSelect with --kernels op=variant[,op=variant...]; \"matmul=NAME\" sets every matmul op.")
		return 0
	})
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func mark(b bool) string {
	if b {
		return "*"
	}
	return ""
}
