package main

import (
	"context"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/bus/redisbus"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/pgstore"
)

func openPostgres(ctx context.Context, url string) (store.Store, error) {
	return pgstore.Open(ctx, url)
}

func openRedis(ctx context.Context, url string) (bus.Bus, error) {
	return redisbus.Open(ctx, url, redisbus.Options{})
}
