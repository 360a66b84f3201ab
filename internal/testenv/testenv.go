// Package testenv finds the external services that integration tests run
// against, from the environment.
//
// A test asks for a service's URL; when its variable is unset the test is
// skipped with a message saying how to run it, except under CI (the CI
// variable set), where a missing service fails the test: CI can never pass by
// skipping.
package testenv

import (
	"os"
	"testing"
)

// Postgres returns the PostgreSQL URL in AGENTCHAT_TEST_POSTGRES.
func Postgres(t testing.TB) string {
	t.Helper()
	return lookup(t, "AGENTCHAT_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
}

// Redis returns the Redis URL in AGENTCHAT_TEST_REDIS.
func Redis(t testing.TB) string {
	t.Helper()
	return lookup(t, "AGENTCHAT_TEST_REDIS", "redis://127.0.0.1:6379/0")
}

func lookup(t testing.TB, name, example string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not set, and CI must run this integration test (e.g. %s=%s)", name, name, example)
	}
	t.Skipf("skipping integration test: set %s to run it (e.g. %s=%s)", name, name, example)
	return ""
}
