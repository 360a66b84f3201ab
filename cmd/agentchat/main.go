package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

const usage = `agentchat: an agent-chat backend that streams every step over SSE.

Usage:
  agentchat serve [flags]     start the HTTP server
  agentchat migrate [flags]   apply database migrations and exit
  agentchat bench [flags]     load-test a server against a fake model upstream
  agentchat healthcheck       exit 0 when a local server's /healthz answers 200 (for containers)
  agentchat help              show this help

Run "agentchat <command> -h" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:]))
}

func dispatch(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], os.Getenv, os.Stdout, os.Stderr)
	case "migrate":
		err = migrate(ctx, args[1:], os.Getenv, os.Stderr)
	case "healthcheck":
		err = healthcheck(ctx, args[1:], os.Getenv, os.Stderr)
	case "bench":
		err = benchCmd(ctx, args[1:], os.Stdout, os.Stderr)
	case "help", "-h", "--help":
		fmt.Fprint(os.Stdout, usage)
		return 0
	default:
		fmt.Fprintf(os.Stderr, "agentchat: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintf(os.Stderr, "agentchat %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
