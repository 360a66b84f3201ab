package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/agentchat/agentchat/internal/auth"
	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/telemetry"
)

// newAuthenticator builds the authenticator of serve: static tokens, the
// HS256 secret, and the trusted OpenID providers, whose keys are fetched
// and kept fresh in the background until stop is called (so a provider
// slow to answer never holds up the start). /readyz reports their keys.
func newAuthenticator(ctx context.Context, cfg config.Config, tokens []auth.Token, health *telemetry.Health, log *slog.Logger) (*auth.Authenticator, func(), error) {
	a := auth.New(tokens, cfg.JWTSecret)
	issuers, err := cfg.Issuers()
	if err != nil {
		return nil, nil, err
	}
	if len(issuers) == 0 {
		return a, func() {}, nil
	}
	if err := a.Trust(issuers, auth.KeyOptions{ClockSkew: cfg.JWTClockSkew}); err != nil {
		return nil, nil, err
	}
	health.Keys = func() []telemetry.KeyCheck {
		var out []telemetry.KeyCheck
		for _, k := range a.KeyStatus() {
			if k.Err() != nil {
				log.Warn("token issuer keys: "+k.Status, "issuer", k.Issuer, "err", k.Err())
			}
			out = append(out, telemetry.KeyCheck{Issuer: k.Issuer, Status: k.Status, Keys: k.Keys, Error: k.Error})
		}
		return out
	}
	for _, is := range issuers {
		log.Info("trusting token issuer", "issuer", is.Issuer, "audience", is.Audience, "console_sign_in", is.ClientID != "")
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx) })
	return a, func() { cancel(); wg.Wait() }, nil
}
