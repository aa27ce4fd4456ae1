package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"plexbench/engine"
	"plexbench/workbench/demo"
)

// runGenerate decodes greedily through the same engine the scorer uses: a
// smoke test of the decode path.
func (c *cli) generateCmd() *cobra.Command {
	cmd, fs := c.command("generate", "--model MODEL.gguf --prompt TEXT [-n N]", "generate text greedily from a prompt")
	model := fs.String("model", "", "the GGUF model (default: the embedded stories260K demo)")
	prompt := fs.String("prompt", "Once upon a time", "prompt text (BOS is added when the vocab asks)")
	n := fs.IntP("tokens", "n", 48, "tokens to generate")
	threads := fs.Int("threads", 0, "worker threads (default: all cores)")
	return c.action(cmd, func(_ []string) int {
		if *n < 1 {
			return c.fail(fmt.Errorf("generate: -n %d must be at least 1", *n))
		}
		path := *model
		if path == "" {
			var err error
			if path, err = demo.ModelPath(); err != nil {
				return c.fail(err)
			}
		}
		// Every prompt token covers at least one byte, plus BOS.
		m, err := engine.Load(path, engine.Options{Threads: *threads, KVLen: len(*prompt) + *n + 2})
		if err != nil {
			return c.fail(err)
		}
		defer m.Close()
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		text, _, err := m.Generate(ctx, *prompt, *n)
		if err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(c.stdout, "%s%s\n", *prompt, text)
		return 0
	})
}
