package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/file/diskfile"
	"github.com/agentchat/agentchat/internal/file/s3file"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/pgstore"
	"github.com/agentchat/agentchat/internal/tool/builtin"
)

// openFiles opens the file storage the configuration names and the file
// service over it and the store. Files a client names by URL are fetched
// through http_get's guarded client, with its allow-list.
func openFiles(ctx context.Context, cfg config.Config, st store.Store, log *slog.Logger) (*file.Service, func(), error) {
	var storage file.Storage
	var err error
	switch kind := cfg.FileStorageKind(); kind {
	case "disk":
		storage, err = diskfile.Open(filepath.Join(cfg.DataDir, "files"))
	case "s3":
		storage, err = s3file.Open(ctx, s3file.Config{Bucket: cfg.S3Bucket, Prefix: cfg.S3Prefix, Endpoint: cfg.S3Endpoint,
			Region: cfg.S3Region, AccessKeyID: cfg.S3AccessKeyID, SecretAccessKey: cfg.S3SecretAccessKey, PathStyle: cfg.S3PathStyle})
	case "postgres":
		pg, ok := st.(*pgstore.Store)
		if !ok {
			err = errors.New("postgres file storage needs a PostgreSQL store")
			break
		}
		storage = pg.FileStorage()
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
