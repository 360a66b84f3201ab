package redisbus_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/bus/bustest"
	"github.com/agentchat/agentchat/internal/bus/redisbus"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newPrefix is a key prefix of one test's own, its keys deleted afterwards.
func newPrefix(t *testing.T, url string) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	prefix := "agentchat_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		rdb := admin(t, url)
		ctx := context.Background()
		keys, err := rdb.Keys(ctx, prefix+":*").Result()
		if err == nil && len(keys) > 0 {
			err = rdb.Del(ctx, keys...).Err()
		}
		if err != nil {
			t.Errorf("delete test keys: %v", err)
		}
	})
	return prefix
}

// admin is a plain client beside the buses under test.
func admin(t *testing.T, url string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func open(t *testing.T, url string, opts redisbus.Options) *redisbus.Bus {
	t.Helper()
	b, err := redisbus.Open(t.Context(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

func TestContract(t *testing.T) {
	url := testenv.Redis(t)
	// Each test gets its own prefix; every bus opened within one test shares
	// it, as replicas of one deployment do.
	var mu sync.Mutex
	prefixes := map[string]string{}
	bustest.Run(t, func(t *testing.T) bus.Bus {
		mu.Lock()
		prefix, ok := prefixes[t.Name()]
		if !ok {
			prefix = newPrefix(t, url)
			prefixes[t.Name()] = prefix
		}
		mu.Unlock()
		return open(t, url, redisbus.Options{Prefix: prefix})
	})
}

func ev(thread string, seq int64) event.Event {
	return event.Event{Tenant: "acme", Thread: thread, Run: "run", Seq: seq, Time: time.UnixMilli(1700000000000).UTC(),
		Type: event.TextDelta, Payload: event.TextDeltaData{MessageID: "m", Delta: fmt.Sprintf("t%d", seq)}}
}

// publish publishes the thread's events from..to, the last as a run's end
// is published: the tests here read the stream next.
func publish(t *testing.T, b *redisbus.Bus, thread string, from, to int64) {
	t.Helper()
	for i := from; i <= to; i++ {
		pub := b.Publish
		if i == to {
			pub = func(ctx context.Context, ev event.Event) error { return redisbus.PublishWaited(ctx, b, ev) }
		}
		if err := pub(t.Context(), ev(thread, i)); err != nil {
			t.Fatal(err)
		}
	}
}

// collectExactly reads n events and fails unless they are seqs from, from+1, …
// with no redelivery: Redis positions are exact.
func collectExactly(t *testing.T, q *bus.Queue, from int64, n int) {
	t.Helper()
	var got []event.Event
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case <-q.Ready():
		case <-timeout:
			t.Fatalf("got %d of %d events", len(got), n)
		}
		evs, err := q.Drain(nil)
		got = append(got, evs...)
		if err != nil && len(got) < n {
			t.Fatalf("subscription ended after %d of %d events: %v", len(got), n, err)
		}
	}
	for i, e := range got {
		if e.Seq != from+int64(i) || e.Payload.(event.TextDeltaData).Delta != fmt.Sprintf("t%d", e.Seq) {
			t.Fatalf("event %d has seq %d, want %d", i, e.Seq, from+int64(i))
		}
	}
}

func TestResumeFromPosition(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	prefix := newPrefix(t, url)
	pub := open(t, url, redisbus.Options{Prefix: prefix})
	publish(t, pub, "th", 1, 10)

	// Another replica, following nothing yet, resumes from a Last-Event-ID.
	b := open(t, url, redisbus.Options{Prefix: prefix})
	q, err := b.Subscribe(t.Context(), "acme", "th", 4)
	if err != nil {
		t.Fatal(err)
	}
	collectExactly(t, q, 5, 6)

	// A second subscription to the followed thread, from an earlier position,
	// catches up by itself and then shares the live stream.
	q2, err := b.Subscribe(t.Context(), "acme", "th", 2)
	if err != nil {
		t.Fatal(err)
	}
	collectExactly(t, q2, 3, 8)
	publish(t, pub, "th", 11, 12)
	collectExactly(t, q, 11, 2)
	collectExactly(t, q2, 11, 2)
}

func TestRetainedHistoryIsCapped(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	prefix := newPrefix(t, url)
	b := open(t, url, redisbus.Options{Prefix: prefix, QueueLimit: 20})
	publish(t, b, "th", 1, 50)
	// Half a queue of the most recent events, not an instant overflow; the
	// older ones are the store's to replay.
	q, err := b.Subscribe(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	collectExactly(t, q, 41, 10)
	publish(t, b, "th", 51, 51)
	collectExactly(t, q, 51, 1)
}

func TestRepublishIsIdempotent(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	prefix := newPrefix(t, url)
	b := open(t, url, redisbus.Options{Prefix: prefix})
	q, err := b.Subscribe(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, b, "th", 1, 3)
	publish(t, b, "th", 2, 3) // a retry, or a takeover re-publishing: no error
	publish(t, b, "th", 4, 4)
	collectExactly(t, q, 1, 4)
	key := redisbus.StreamKey(prefix, "acme", "th")
	got, err := b.Retained(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Seq != 1 || got[3].Seq != 4 {
		t.Fatalf("stream holds %v, want seqs 1 to 4 once each", got)
	}
	if ttl := admin(t, url).TTL(t.Context(), key).Val(); ttl <= 0 || ttl > 24*time.Hour {
		t.Fatalf("stream ttl %v", ttl)
	}
}

func TestKeysDoNotCollide(t *testing.T) {
	t.Parallel()
	// Without escaping, tenant "a}:thread:b" and tenant "a" would share slots and could share keys.
	for _, pair := range [][2][2]string{
		{{"a}:thread:b", "c"}, {"a", "b}:thread:c"}},
		{{"a:b", "c"}, {"a", "b:c"}},
		{{"a%3Ab", "c"}, {"a:b", "c"}},
	} {
		k1 := redisbus.StreamKey("p", pair[0][0], pair[0][1])
		k2 := redisbus.StreamKey("p", pair[1][0], pair[1][1])
		if k1 == k2 {
			t.Errorf("%v and %v share key %s", pair[0], pair[1], k1)
		}
	}
	if got := redisbus.StreamKey("agentchat", "acme", "th1"); got != "agentchat:{acme}:thread:th1" {
		t.Errorf("key %s", got)
	}
}

// clientIDs lists the ids of the connections named name.
func clientIDs(t *testing.T, rdb *redis.Client, name string) []int64 {
	t.Helper()
	list, err := rdb.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for line := range strings.Lines(list) {
		var id int64
		fields := map[string]string{}
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if fields["name"] == name {
			if _, err := fmt.Sscan(fields["id"], &id); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

func TestManyThreadsShareConnections(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	prefix := newPrefix(t, url)
	b := open(t, url, redisbus.Options{Prefix: prefix})
	const threads = 300
	qs := make([]*bus.Queue, threads)
	for i := range qs {
		q, err := b.Subscribe(t.Context(), "acme", fmt.Sprint("th", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		qs[i] = q
	}
	// Three subscriptions more to one thread add nothing.
	for range 3 {
		q, err := b.Subscribe(t.Context(), "acme", "th0", 0)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	for i := range threads {
		publish(t, b, fmt.Sprint("th", i), 1, 2)
	}
	for _, q := range qs {
		collectExactly(t, q, 1, 2)
	}
	// A reader per 128 threads of a shard: a handful, not one per thread.
	if n, most := len(clientIDs(t, admin(t, url), prefix+":reader")), redisbus.Shards+threads/128; n > most {
		t.Fatalf("%d reader connections follow %d threads, want at most %d", n, threads, most)
	}
}

func TestNewThreadWakesReader(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	b := open(t, url, redisbus.Options{Prefix: newPrefix(t, url)})
	// Far longer than collectExactly waits: only CLIENT UNBLOCK can make the
	// reader pick up the second thread in time.
	redisbus.SetBlock(b, time.Hour)
	q1, err := b.Subscribe(t.Context(), "acme", "one", 0)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, b, "one", 1, 1)
	collectExactly(t, q1, 1, 1) // the reader is now blocked on "one" alone
	q2, err := b.Subscribe(t.Context(), "acme", "two", 0)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, b, "two", 1, 1)
	collectExactly(t, q2, 1, 1)
}

func TestSurvivesKilledConnections(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	prefix := newPrefix(t, url)
	b := open(t, url, redisbus.Options{Prefix: prefix, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	rdb := admin(t, url)
	q, err := b.Subscribe(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	controls, err := b.Controls(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	publish(t, b, "th", 1, 5)
	collectExactly(t, q, 1, 5)

	// Kill every connection of the bus: publisher pool, control subscription, reader.
	killed := 0
	for _, role := range []string{"bus", "reader"} {
		for _, id := range clientIDs(t, rdb, prefix+":"+role) {
			if err := rdb.ClientKillByFilter(t.Context(), "ID", fmt.Sprint(id)).Err(); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed < 3 {
		t.Fatalf("killed %d connections, want the reader, the publisher and the control subscription", killed)
	}
	// Events published meanwhile wait in the stream; the reader resumes from
	// its position and loses none of them.
	publish(t, b, "th", 6, 10)
	collectExactly(t, q, 6, 5)

	// Control messages are Pub/Sub: those sent while the subscription
	// reconnects are lost by design, so keep sending until one arrives.
	want := bus.Control{Kind: bus.ControlCancel, Tenant: "acme", RunID: "r1"}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(10 * time.Second)
	for {
		if err := b.PublishControl(t.Context(), want); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-controls:
			if got != want {
				t.Fatalf("control %+v", got)
			}
			return
		case <-tick.C:
		case <-timeout:
			t.Fatal("control stream did not recover")
		}
	}
}

func TestSubscribeAfterClose(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	b := open(t, url, redisbus.Options{Prefix: newPrefix(t, url)})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Subscribe(t.Context(), "acme", "th", 0); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("subscribe after close: %v", err)
	}
	if err := b.Publish(t.Context(), ev("th", 1)); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("publish after close: %v", err)
	}
	if _, err := b.Controls(t.Context()); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("controls after close: %v", err)
	}
}

// Publishes racing Close all return, each with nil or bus.ErrClosed: Publish
// waits only on its own reply, so a publish queued as the publisher ends must
// still be answered (or refused). A pipeline that the publisher could not
// send within its bound (sendTimeout: 64 goroutines publishing flat out
// under the race detector on a loaded 2-core machine starve it) answers
// bus.ErrUnavailable, which is an answer too.
func TestPublishesDuringCloseReturn(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	b, err := redisbus.Open(t.Context(), url, redisbus.Options{Prefix: newPrefix(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	const publishers = 64
	var started, wg sync.WaitGroup
	started.Add(publishers)
	errs := make(chan error, publishers)
	for i := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			thread := fmt.Sprint("th", i)
			for seq := int64(1); ; seq++ {
				err := b.Publish(context.Background(), ev(thread, seq))
				if seq == 1 {
					started.Done()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	started.Wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, bus.ErrClosed) && !errors.Is(err, bus.ErrUnavailable) {
			t.Errorf("publish during close: %v", err)
		}
	}
}

// A publish does not wait for its own XADD: one that fails is returned by
// a later publish of the thread (once), which is then not published; a
// run's end is waited for, and returns the thread's failures too.
func TestFailedSendIsReturnedLater(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	prefix := newPrefix(t, url)
	b := open(t, url, redisbus.Options{Prefix: prefix})
	rdb := admin(t, url)
	key := redisbus.StreamKey(prefix, "acme", "th")
	if err := rdb.Set(t.Context(), key, "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(t.Context(), ev("th", 1)); err != nil {
		t.Fatalf("first publish: %v (it does not wait for its XADD)", err)
	}
	// Later publishes return nil until the publisher has answered the first
	// (a full queue makes one wait for that), then its failure.
	seq := int64(2)
	var err error
	for ; err == nil; seq++ {
		err = b.Publish(t.Context(), ev("th", seq))
	}
	if !errors.Is(err, bus.ErrUnavailable) || !strings.Contains(err.Error(), "seq 1 ") {
		t.Fatalf("publish %d: %v, want the first one's failure", seq-1, err)
	}
	end := func(seq int64) event.Event {
		e := ev("th", seq)
		e.Type, e.Payload = event.RunFinished, event.RunFinishedData{Status: "succeeded"}
		return e
	}
	// A run's end returns the failures still unreturned (those after the first).
	if err := b.Publish(t.Context(), end(seq)); !errors.Is(err, bus.ErrUnavailable) {
		t.Fatalf("end: %v, want a failure", err)
	}
	if err := rdb.Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(t.Context(), ev("th", seq+1)); err != nil {
		t.Fatalf("publish after the failures were returned: %v", err)
	}
	if err := b.Publish(t.Context(), end(seq+2)); err != nil {
		t.Fatal(err)
	}
	got, err := b.Retained(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != seq+1 || got[1].Seq != seq+2 {
		t.Fatalf("stream holds %v, want seqs %d and %d", got, seq+1, seq+2)
	}
}

// A thread's publishes that queued while a pipeline was in flight go to
// Redis as one entry, whose id is the last one's seq; every way of reading
// the stream gets each of its events once, in order, from any position
// inside it, on this replica and on another.
func TestEntryOfSeveralEvents(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	prefix := newPrefix(t, url)
	b := open(t, url, redisbus.Options{Prefix: prefix})
	other := open(t, url, redisbus.Options{Prefix: prefix})
	following, err := other.Subscribe(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := redisbus.SendAsOneEntry(b, ev("th", 1), ev("th", 2), ev("th", 3), ev("th", 4), ev("th", 5)); err != nil {
		t.Fatal(err)
	}
	key := redisbus.StreamKey(prefix, "acme", "th")
	msgs, err := admin(t, url).XRange(t.Context(), key, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].ID != "5-0" {
		t.Fatalf("stream holds %v, want one entry 5-0", msgs)
	}
	collectExactly(t, following, 1, 5)
	resumed, err := other.Subscribe(t.Context(), "acme", "th", 3) // inside the entry, on a thread followed
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := open(t, url, redisbus.Options{Prefix: prefix}).Subscribe(t.Context(), "acme", "th", 2)
	if err != nil {
		t.Fatal(err)
	}
	// Seqs 4 and 5 again (a republish) with 6: an entry Redis takes, as its
	// id is new, and whose repeats nobody receives.
	if err := redisbus.SendAsOneEntry(b, ev("th", 4), ev("th", 5), ev("th", 6)); err != nil {
		t.Fatal(err)
	}
	collectExactly(t, following, 6, 1)
	collectExactly(t, resumed, 4, 3)
	collectExactly(t, fresh, 3, 4)
	got, err := b.Retained(t.Context(), "acme", "th", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0].Seq != 2 || got[4].Seq != 6 {
		t.Fatalf("retained %v, want seqs 2 to 6 once each", got)
	}
}

// Retained is exact on Redis: everything the stream holds after a position,
// even more than a subscription would replay.
func TestRetainedReadsTheWholeStream(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	b := open(t, url, redisbus.Options{Prefix: newPrefix(t, url), QueueLimit: 8})
	publish(t, b, "th", 1, 100)
	got, err := b.Retained(t.Context(), "acme", "th", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 90 || got[0].Seq != 11 || got[89].Seq != 100 {
		t.Fatalf("retained %d events, %v…", len(got), got[:min(len(got), 2)])
	}
}

// A replica's own publishes reach its subscriptions directly, and the copy
// read back from Redis is not delivered a second time.
func TestLocalPublishesOnce(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	prefix := newPrefix(t, url)
	b := open(t, url, redisbus.Options{Prefix: prefix})
	other := open(t, url, redisbus.Options{Prefix: prefix})
	local, err := b.Subscribe(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	remote, err := other.Subscribe(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, b, "th", 1, 300)
	collectExactly(t, local, 1, 300)
	collectExactly(t, remote, 1, 300)
	// Only b's reader can bring an event the other bus publishes, and it
	// reads the stream in order: once 301 is here, a second copy of any of
	// 1..300 would have come before it (no sleep that a loaded machine
	// outlasts before the reader has looked).
	publish(t, other, "th", 301, 301)
	collectExactly(t, local, 301, 1)
	if evs, err := local.Drain(nil); len(evs) != 0 || err != nil {
		t.Fatalf("delivered again: %d events (%v)", len(evs), err)
	}
}

// A thread this replica publishes to is not read back from Redis while its
// publisher is busy: its subscriptions here have every event already. An
// event another replica publishes (a takeover) still arrives, in order.
func TestLocalPublishesAreNotReadBack(t *testing.T) {
	t.Parallel()
	url := testenv.Redis(t)
	prefix := newPrefix(t, url)
	b := open(t, url, redisbus.Options{Prefix: prefix})
	other := open(t, url, redisbus.Options{Prefix: prefix})
	q, err := b.Subscribe(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Each XADD lands before the next publish, as a run's paced by its
	// model do: a burst landing at once would be one XREAD, whatever it
	// returned.
	for i := int64(1); i <= 100; i++ {
		if err := redisbus.PublishWaited(t.Context(), b, ev("th", i)); err != nil {
			t.Fatal(err)
		}
	}
	collectExactly(t, q, 1, 100)
	// Only the reader can bring this one, so it has followed the thread by
	// now. Had it followed it all along, each XADD would have woken it with
	// the new entry: most of the 100 would have been read.
	publish(t, other, "th", 101, 101)
	collectExactly(t, q, 101, 1)
	if n := redisbus.ReadBack(b); n > 10 {
		t.Fatalf("the reader read back %d of the 100 entries published here", n)
	}
}

// A run's end, or its pause for a decision, published here makes the reader
// follow the thread again at once: the next run, or the continuation, may
// execute on another replica.
func TestRunEndFollowsTheThreadAgain(t *testing.T) {
	t.Parallel()
	for _, last := range []event.Type{event.RunFinished, event.ToolAwaiting} {
		t.Run(string(last), func(t *testing.T) {
			t.Parallel()
			url := testenv.Redis(t)
			prefix := newPrefix(t, url)
			b := open(t, url, redisbus.Options{Prefix: prefix})
			other := open(t, url, redisbus.Options{Prefix: prefix})
			// Far longer than collectExactly waits: only the end can bring
			// the other replica's event in time.
			redisbus.SetLocalQuiet(b, time.Hour)
			q, err := b.Subscribe(t.Context(), "acme", "th", 0)
			if err != nil {
				t.Fatal(err)
			}
			publish(t, b, "th", 1, 4)
			end := ev("th", 5)
			end.Type = last
			switch last {
			case event.RunFinished:
				end.Payload = event.RunFinishedData{Status: "succeeded"}
			case event.ToolAwaiting:
				end.Payload = event.ToolAwaitingData{ToolCallID: "c", Name: "n"}
			}
			if err := b.Publish(t.Context(), end); err != nil {
				t.Fatal(err)
			}
			if evs := bustest.Collect(t, q, 0, 5); evs[4].Seq != 5 || evs[4].Type != last {
				t.Fatalf("got %+v last, want the end", evs[4])
			}
			publish(t, other, "th", 6, 6)
			collectExactly(t, q, 6, 1)
		})
	}
}

// benchBus opens a bus on the test Redis under a key prefix of its own,
// closed and its keys deleted when b ends.
func benchBus(b *testing.B) *redisbus.Bus {
	url := testenv.Redis(b)
	prefix := "agentchat_bench_" + fmt.Sprint(time.Now().UnixNano())
	bs, err := redisbus.Open(b.Context(), url, redisbus.Options{Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		rdb := redis.NewClient(must(redis.ParseURL(url)))
		defer rdb.Close()
		if keys, err := rdb.Keys(context.Background(), prefix+":*").Result(); err == nil && len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
		bs.Close()
	})
	return bs
}

// BenchmarkPublishParallel publishes from many goroutines at once, each to a
// thread of its own that a subscription here follows, as a replica's
// executions do under load:
//
//	go test ./internal/bus/redisbus -run XXX -bench PublishParallel -benchmem
func BenchmarkPublishParallel(b *testing.B) {
	bs := benchBus(b)
	var next atomic.Int64
	b.SetParallelism(256) // × GOMAXPROCS publishers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		thread := fmt.Sprint("th", next.Add(1))
		q, err := bs.Subscribe(b.Context(), "acme", thread, 0)
		if err != nil {
			b.Error(err)
			return
		}
		defer q.Stop(nil)
		var seq int64
		for pb.Next() {
			seq++
			if err := bs.Publish(b.Context(), ev(thread, seq)); err != nil {
				b.Error(err)
				return
			}
			q.Drain(nil)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
