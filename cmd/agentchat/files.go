package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/file/diskfile"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// openFiles opens the file storage the configuration names and the file
// service over it and the store. Files a client names by URL are fetched
// through http_get's guarded client, with its allow-list.
func openFiles(_ context.Context, cfg config.Config, st store.Store, log *slog.Logger) (*file.Service, func(), error) {
	var storage file.Storage
	var err error
	switch kind := cfg.FileStorageKind(); kind {
	case "disk":
		storage, err = diskfile.Open(filepath.Join(cfg.DataDir, "files"))
	default:
		err = fmt.Errorf("file storage %q is not available in this build", kind)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("file storage: %w", err)
	}
	fetch, err := builtin.GuardedClient(builtin.HTTPGetConfig{Allow: cfg.HTTPGetAllow})
	if err != nil {
		_ = storage.Close()
		return nil, nil, err
	}
	svc := file.NewService(file.Config{Store: st, Storage: storage, MaxBytes: cfg.FileMaxBytes, Types: cfg.FileTypes,
		TenantQuota: cfg.FileTenantQuota, Retention: cfg.FileRetention, Fetch: fetch, Logger: log})
	log.Info("file storage", "kind", cfg.FileStorageKind())
	return svc, func() { _ = storage.Close() }, nil
}
