package redisbus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentchat/agentchat/internal/bus"
)

// DefaultPrefix is Options.Prefix's default.
const DefaultPrefix = "agentchat"

// Options configures a Bus. Zero values mean the defaults.
type Options struct {
	// Prefix starts every key and channel; replicas of one deployment share
	// it. Default DefaultPrefix.
	Prefix string
	// MaxLen caps each thread's stream, approximately (XADD MAXLEN ~), in
	// entries. Default 10000.
	MaxLen int64
	// TTL expires a thread's stream this long after its last publish. Default 24h.
	TTL time.Duration
	// QueueLimit bounds each subscription's backlog, in events. Default
	// bus.DefaultQueueLimit.
	QueueLimit int
	// Logger receives warnings about Redis errors being retried. Default: discarded.
	Logger *slog.Logger
}

// maxBackoff bounds the wait between retries after a Redis error.
const maxBackoff = 2 * time.Second

// Bus is a Redis Streams bus.Bus. It is safe for concurrent use.
type Bus struct {
	url     string
	opts    Options
	log     *slog.Logger
	rdb     *redis.Client // everything but the readers' blocking XREADs
	backlog int64         // retained events a new subscription may receive
	block   atomic.Int64  // XREAD BLOCK, a time.Duration; tests lengthen it
	quiet   atomic.Int64  // localQuiet, a time.Duration; tests lengthen it

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // readers, unblockers, control streams and the publishers

	mu     sync.Mutex  // orders Close against the start of a control stream
	closed atomic.Bool // set under mu, read anywhere

	// Subscriptions, readers and their state live in shards by stream key,
	// each with its own lock: every publish takes its topic's lock to
	// deliver locally, and with one lock for all, a thousand streams'
	// publishers queued on it (most of their time, in a mutex profile).
	shards [shardCount]shard

	pub publishQueue // every publish, for the one publisher
}

// shardCount is how many shards a bus's subscriptions are spread over; each
// has its own readers, so it is also the fewest reader connections a bus
// following that many threads holds.
const shardCount = 8

// shard is a part of a bus's streams: the topics whose key hashes to it and
// the readers following them, which mu guards.
type shard struct {
	mu      sync.Mutex
	topics  map[string]*topic // by stream key
	readers []*reader
}

// shard is the shard of the stream key.
func (b *Bus) shard(key string) *shard {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return &b.shards[h%shardCount]
}

var _ bus.Bus = (*Bus)(nil)

// Open connects to the Redis at url (redis:// or rediss://, with go-redis's
// query options such as pool_size) and checks that it answers.
func Open(ctx context.Context, url string, opts Options) (*Bus, error) {
	ropts, err := redis.ParseURL(url)
	if err != nil {
		// The parse error may quote the URL, password included.
		return nil, errors.New("redisbus: invalid redis url")
	}
	opts.Prefix = cmp.Or(opts.Prefix, DefaultPrefix)
	opts.MaxLen = cmp.Or(opts.MaxLen, 10000)
	opts.TTL = cmp.Or(opts.TTL, 24*time.Hour)
	opts.QueueLimit = cmp.Or(opts.QueueLimit, bus.DefaultQueueLimit)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if ropts.ClientName == "" {
		ropts.ClientName = clientName(opts.Prefix, "bus")
	}
	rdb := redis.NewClient(ropts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redisbus: connect: %w", err)
	}
	b := &Bus{
		url: url, opts: opts, log: log, rdb: rdb,
		backlog: int64(max(1, opts.QueueLimit/2)),
	}
	b.block.Store(int64(blockFor))
	b.quiet.Store(int64(localQuiet))
	for i := range b.shards {
		b.shards[i].topics = map[string]*topic{}
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	q := &b.pub
	q.wake, q.expireSeen, q.expireSweep, q.failed = make(chan struct{}, 1), map[string]time.Time{}, minExpireSweep, map[string]error{}
	b.wg.Add(1)
	go b.publisher(q)
	return b, nil
}

var tenantEscaper = strings.NewReplacer("%", "%25", ":", "%3A", "{", "%7B", "}", "%7D")

// StreamKey is the key of the stream holding a thread's events under prefix.
func StreamKey(prefix, tenant, thread string) string {
	return prefix + ":{" + tenantEscaper.Replace(tenant) + "}:thread:" + thread
}

// clientName names the bus's connections in CLIENT LIST ("<prefix>:bus",
// "<prefix>:reader"), with the spaces and controls Redis refuses replaced.
func clientName(prefix, role string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '_'
		}
		return r
	}, prefix+":"+role)
}

func entryID(seq int64) string { return strconv.FormatInt(seq, 10) + "-0" }

// seqOf reads the seq part of a stream entry id.
func seqOf(id string) (int64, bool) {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	return n, err == nil
}

// unavailable marks a Redis error as the bus being unavailable (the caller
// may retry), unless it is the caller's own cancellation.
func unavailable(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", bus.ErrUnavailable, err)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (b *Bus) isClosed() bool { return b.closed.Load() }

// MaxConns is how many connections the bus may hold besides its readers'
// (its client's pool and the control subscription), which the process's
// open-files budget keeps in reserve. Readers add one per 128 live threads.
func (b *Bus) MaxConns() int { return b.rdb.Options().PoolSize + 1 }

// Close ends every subscription with bus.ErrClosed and every Controls stream,
// waits for the bus's goroutines and releases its connections.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed.Load() {
		b.mu.Unlock()
		return nil
	}
	b.closed.Store(true)
	b.mu.Unlock()
	// A Subscribe that saw the bus open under a shard's lock has added its
	// topic (and maybe a reader) before that lock is taken here.
	var queues []*bus.Queue
	var readers []*reader
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		for _, t := range sh.topics {
			for s := range t.subs {
				s.stop()
				queues = append(queues, s.q)
			}
		}
		readers = append(readers, sh.readers...)
		sh.mu.Unlock()
	}

	b.cancel()
	var errs []error
	for _, r := range readers {
		// Closing the client ends a blocked XREAD, which ignores contexts.
		errs = append(errs, r.client.Close())
	}
	b.wg.Wait()
	for _, q := range queues {
		q.Stop(bus.ErrClosed)
	}
	errs = append(errs, b.rdb.Close())
	return errors.Join(errs...)
}
