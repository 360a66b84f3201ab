package chat

import (
	"sync"
	"testing"

	"github.com/google/uuid"
)

// TestNewIDIsAnIncreasingUUIDv7 checks that ids are version 7 UUIDs of the
// RFC 9562 variant, and that those made one after another, from many
// goroutines at once, are distinct and increase in each goroutine.
func TestNewIDIsAnIncreasingUUIDv7(t *testing.T) {
	t.Parallel()
	const workers, each = 8, 2000
	ids := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ids[w] = append(ids[w], NewID())
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, list := range ids {
		for i, id := range list {
			u, err := uuid.Parse(id)
			if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
				t.Fatalf("id %q: version %v, variant %v, err %v", id, u.Version(), u.Variant(), err)
			}
			if seen[id] {
				t.Fatalf("id %q made twice", id)
			}
			seen[id] = true
			if i > 0 && id <= list[i-1] {
				t.Fatalf("id %q follows %q", id, list[i-1])
			}
		}
	}
}

func BenchmarkNewID(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			NewID()
		}
	})
}
