package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"plexbench/kernels"
)

// runKernels lists every op's kernel variants, what this CPU supports and
// which one a run picks by default.
func runKernels(args []string) int {
	fs := newFlags("kernels", "")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	fmt.Printf("CPU: %s", kernels.CPU())
	if lvl := kernels.CPULevel(); lvl != "native" {
		fmt.Printf(" (%s=%s; detected: %s)", kernels.CPUEnv, lvl, kernels.CPUDetected())
	}
	fmt.Print("\n\n")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "OP\tVARIANT\tSUPPORTED\tDEFAULT\tWHAT")
	for _, v := range kernels.KernelVariants() {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", v.Op, v.Name, yesNo(v.Supported), mark(v.Default), v.Desc)
	}
	w.Flush()
	fmt.Println("\nSelect with --kernels op=variant[,op=variant...]; \"matmul=NAME\" sets every matmul op.")
	return 0
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
