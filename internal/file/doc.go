// Package file is where uploaded files' bytes live: the Storage interface,
// its backends (diskfile, embedded: files under the data directory;
// s3file, scaled out: an S3-compatible object store; pgstore.FileStorage,
// scaled out with nothing new: the store's PostgreSQL database) and the
// contract every backend passes (filetest).
//
// Storage is content-addressed: an object's key is the lowercase hex SHA-256
// of its bytes (ValidKey), so equal uploads share one object and a key can
// never name a path outside the backend's place. The metadata (who owns a
// file, its name and media type) is the store's (store.Files); Storage
// knows bytes only and nothing of tenants.
//
// Invariants every backend keeps:
//   - Put is atomic: a reader sees the whole object or none, and a Put that
//     fails (a short body, a cancelled context, a crash) leaves nothing
//     behind under the key.
//   - Put of a key that exists succeeds (the bytes are the same).
//   - Open of a missing key is ErrNotFound; Delete of one is not an error.
//   - Storage is safe for concurrent use.
package file
