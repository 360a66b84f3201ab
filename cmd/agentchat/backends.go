package main

import (
	"context"
	"errors"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/store"
)

// openPostgres and openRedis are wired when the scale-out backends land.
func openPostgres(ctx context.Context, url string) (store.Store, error) {
	return nil, errors.New("the PostgreSQL store is not built into this binary yet")
}

func openRedis(ctx context.Context, url string) (bus.Bus, error) {
	return nil, errors.New("the Redis bus is not built into this binary yet")
}
