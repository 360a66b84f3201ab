package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/agentchat/agentchat/internal/config"
)

// healthcheck asks a running server's /healthz and fails unless it answers
// 200: the container image's HEALTHCHECK, which has no curl or wget.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := cmp.Or(getenv("AGENTCHAT_ADDR"), config.DefaultAddr)
	url := fs.String("url", "", "URL to check (default http://<AGENTCHAT_ADDR>/healthz, a wildcard host asked on 127.0.0.1)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *url == "" {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("AGENTCHAT_ADDR %q: %w", addr, err)
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		*url = "http://" + net.JoinHostPort(host, port) + "/healthz"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", *url, resp.Status)
	}
	return nil
}
