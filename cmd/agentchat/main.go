package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentchat/agentchat/internal/config"
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
	os.Exit(dispatch(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// errUsage: the command line was wrong and the command has said so (exit status 2).
var errUsage = errors.New("usage")

// dispatch runs the command args name and returns the exit status: 0 for
// success (help included), 1 for a failure, 2 for a command line that
// could not be understood.
func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], getenv, stdout, stderr)
	case "migrate":
		err = migrate(ctx, args[1:], getenv, stdout, stderr)
	case "healthcheck":
		err = healthcheck(ctx, args[1:], getenv, stderr)
	case "bench":
		err = benchCmd(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "agentchat: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var flagErr *config.FlagError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &flagErr):
		fmt.Fprintf(stderr, "agentchat %s: %v\nRun \"agentchat %s --help\" for its settings.\n", args[0], err, args[0])
		return 2
	}
	fmt.Fprintf(stderr, "agentchat %s: %v\n", args[0], err)
	return 1
}
