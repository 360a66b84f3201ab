// Command oidctest-server runs the test OpenID provider of package oidctest
// on 127.0.0.1 for the browser tests: it prints one JSON line
// ({"issuer": …, "token": …}, the token a valid one for -audience) and
// serves until its standard input closes or it is signalled. The code flow
// signs in -user of -tenant at once. Not for real users.
package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentchat/agentchat/internal/auth/oidctest"
)

func main() {
	audience := flag.String("audience", "agentchat", "aud of the tokens (the client id when the console keeps the ID token)")
	user := flag.String("user", "alice", "sub of the tokens")
	tenant := flag.String("tenant", "acme", "tenant claim of the tokens")
	flag.Parse()
	p := oidctest.New()
	defer p.Close()
	p.User = *user
	p.Audience = *audience
	p.Claims["tenant"] = *tenant
	kid := p.Published()[0]
	json.NewEncoder(os.Stdout).Encode(map[string]string{
		"issuer": p.URL,
		"token":  p.Sign(kid, p.Valid(*audience, *user, map[string]any{"tenant": *tenant})),
	})
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-done:
	case <-sig:
	}
}
