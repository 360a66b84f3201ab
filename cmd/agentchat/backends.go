package main

import (
	"context"
	"log/slog"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/bus/redisbus"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/pgstore"
)

func openPostgres(ctx context.Context, url string) (store.Store, error) {
	return pgstore.Open(ctx, url)
}

func openRedis(ctx context.Context, url, prefix string, log *slog.Logger) (bus.Bus, error) {
	return redisbus.Open(ctx, url, redisbus.Options{Prefix: prefix, Logger: log})
}
