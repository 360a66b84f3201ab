package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SoakResult is what a soak measured: its chats, and the servers'
// goroutines, resident memory, open files and CPU minute by minute (summed
// over the servers).
type SoakResult struct {
	Duration   float64      `json:"durationSeconds"`
	Chats      int64        `json:"chats"`
	Tokens     int64        `json:"tokens"`
	Errors     int          `json:"errors"`
	Refused    int          `json:"refused"`
	FailedRuns int          `json:"failedRuns"`
	NoEnd      int          `json:"noEnd"`
	Minutes    []SoakMinute `json:"minutes"`
}

// SoakMinute summarises one minute's samples, taken every second. An
// instant's resident set lands anywhere in the garbage collector's swing
// (a few MiB at 200 streams), so a minute's RSS is given as the least,
// the median and the greatest of its samples: memory that grows lifts all
// three, and the swing shows as the spread between them.
type SoakMinute struct {
	Minute     int   `json:"minute"`
	Samples    int   `json:"samples"`
	Goroutines int64 `json:"goroutines"` // median
	RSSKiB     int64 `json:"rssKiB"`     // median
	RSSMinKiB  int64 `json:"rssMinKiB"`
	RSSMaxKiB  int64 `json:"rssMaxKiB"`
	OpenFiles  int64 `json:"openFiles"` // median
	// The resident set's parts (medians): anonymous memory, and mapped
	// files with shared memory (see procReader.resident).
	AnonKiB int64 `json:"anonKiB"`
	FileKiB int64 `json:"fileKiB"`
	// CPUmsPer1kTokens is the servers' CPU time over the minute per 1000
	// tokens of the chats that ended in it: work that grows with uptime
	// (a map walked whole, a queue never drained) shows as a rise here
	// while the load stays the same.
	CPUmsPer1kTokens float64 `json:"cpuMsPer1000Tokens"`
}

// RSSGrowthKiB is how far the last minute's resident set lies above the
// first's: by the medians, and beyond the first minute's range (the last
// minute's least sample less the first minute's greatest; zero or less
// when the two minutes' ranges overlap, that is when the growth, if any,
// is inside the collector's swing).
func (r *SoakResult) RSSGrowthKiB() (median, beyond int64) {
	f, l := r.First(), r.Last()
	return l.RSSKiB - f.RSSKiB, l.RSSMinKiB - f.RSSMaxKiB
}

// First and Last are the soak's first and last minutes.
func (r *SoakResult) First() SoakMinute { return r.minute(0) }

// Last is the soak's last minute.
func (r *SoakResult) Last() SoakMinute { return r.minute(len(r.Minutes) - 1) }

func (r *SoakResult) minute(i int) SoakMinute {
	if i < 0 || i >= len(r.Minutes) {
		return SoakMinute{}
	}
	return r.Minutes[i]
}

// soakSample is how often a soak samples the servers: 60 samples a minute
// cover the collector's cycle (a few seconds at 200 streams) many times.
const soakSample = time.Second

// soak keeps cfg.Streams chats going (each client starts its next chat when
// one ends) for cfg.Soak, sampling the servers every few seconds.
func soak(ctx context.Context, cfg Config, client *http.Client, servers []*server, logf func(string, ...any)) (*SoakResult, error) {
	logf("soak: %d concurrent chats of %d tokens at %s/token for %s over %d server(s)", cfg.Streams, cfg.Tokens, cfg.Pace, cfg.Soak, len(servers))
	res := &SoakResult{}
	var chats, tokens, refused, failed, noEnd atomic.Int64
	start := time.Now()
	stop := start.Add(cfg.Soak)
	deadline := time.Duration(cfg.Tokens)*cfg.Pace*10 + 2*time.Minute
	var wg sync.WaitGroup
	for i := range cfg.Streams {
		wg.Go(func() {
			for time.Now().Before(stop) && ctx.Err() == nil {
				cctx, cancel := context.WithTimeout(ctx, deadline)
				m, err := chat(cctx, client, servers[i%len(servers)].url, nil)
				cancel()
				chats.Add(1)
				tokens.Add(int64(m.deltas))
				switch {
				case err == nil:
				case errors.Is(err, errRefused):
					refused.Add(1)
				case errors.Is(err, errRunFailed):
					failed.Add(1)
				default:
					noEnd.Add(1)
				}
				if err != nil && refused.Load()+failed.Load()+noEnd.Load() <= 20 {
					logf("chat %d: %v", i, err)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// Samples by minute; each sample sums the servers.
	var samples [][5]int64
	minute := 0
	// The servers' CPU and the tokens delivered when the minute began.
	var sampleErr error
	// A CPU time that could not be read is -1: the minute after it has no figure.
	cpuAt, err := serversCPU(servers)
	if err != nil {
		sampleErr, cpuAt = err, -1
	}
	tokensAt := int64(0)
	flush := func() {
		if len(samples) == 0 {
			return
		}
		m := summarise(minute+1, samples)
		cpu, err := serversCPU(servers)
		if err != nil {
			sampleErr, cpu = err, -1
		}
		tok := tokens.Load()
		if cpu >= 0 && cpuAt >= 0 && tok > tokensAt {
			m.CPUmsPer1kTokens = (cpu - cpuAt) / float64(tok-tokensAt) * 1000
		}
		cpuAt, tokensAt = cpu, tok
		res.Minutes = append(res.Minutes, m)
		logf("soak minute %d: goroutines %d, RSS %.1f MiB (%.1f–%.1f over %d samples; anonymous %.1f, files %.1f), open files %d, CPU %.2f ms per 1000 tokens, chats so far %d",
			m.Minute, m.Goroutines, mib(m.RSSKiB), mib(m.RSSMinKiB), mib(m.RSSMaxKiB), m.Samples, mib(m.AnonKiB), mib(m.FileKiB), m.OpenFiles, m.CPUmsPer1kTokens, chats.Load())
		samples = samples[:0]
	}
	tick := time.NewTicker(soakSample)
	defer tick.Stop()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-ctx.Done():
			<-done
			break loop
		case now := <-tick.C:
			if now.After(stop) {
				continue // the last chats finish; the last minute is complete
			}
			if m := int(now.Sub(start) / time.Minute); m != minute {
				flush()
				minute = m
			}
			var s [5]int64
			for _, srv := range servers {
				g, err := goroutines(ctx, client, srv.debugURL)
				rss, anon, file, err2 := srv.proc.resident()
				fds, err3 := srv.proc.proc.FileDescriptorsLen()
				if err := errors.Join(err, err2, err3); err != nil {
					sampleErr = err
					continue
				}
				s[0], s[1], s[2], s[3], s[4] = s[0]+g, s[1]+rss, s[2]+int64(fds), s[3]+anon, s[4]+file
			}
			samples = append(samples, s)
		}
	}
	flush()
	res.Duration = time.Since(start).Seconds()
	res.Chats, res.Tokens = chats.Load(), tokens.Load()
	res.Refused, res.FailedRuns, res.NoEnd = int(refused.Load()), int(failed.Load()), int(noEnd.Load())
	res.Errors = res.Refused + res.FailedRuns + res.NoEnd
	if len(res.Minutes) == 0 && sampleErr != nil {
		return res, fmt.Errorf("soak: sampling the servers: %w", sampleErr)
	}
	return res, ctx.Err()
}

// summarise reduces one minute's samples (goroutines, RSS KiB, open files,
// anonymous KiB, file KiB) to its SoakMinute.
func summarise(minute int, samples [][5]int64) SoakMinute {
	sorted := func(k int) []int64 {
		v := make([]int64, len(samples))
		for i, s := range samples {
			v[i] = s[k]
		}
		slices.Sort(v)
		return v
	}
	g, rss, fds := sorted(0), sorted(1), sorted(2)
	n := len(samples)
	return SoakMinute{Minute: minute, Samples: n, Goroutines: g[n/2], RSSKiB: rss[n/2], RSSMinKiB: rss[0], RSSMaxKiB: rss[n-1],
		OpenFiles: fds[n/2], AnonKiB: sorted(3)[n/2], FileKiB: sorted(4)[n/2]}
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// serversCPU is the servers' CPU time in milliseconds, summed.
func serversCPU(servers []*server) (float64, error) {
	var sum float64
	for _, srv := range servers {
		ms, err := srv.proc.cpuMS()
		if err != nil {
			return 0, err
		}
		sum += ms
	}
	return sum, nil
}

// goroutines reads a server's goroutine count from its pprof listener
// (the first line of the goroutine profile: "goroutine profile: total N").
func goroutines(ctx context.Context, client *http.Client, debugURL string) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", debugURL+"/debug/pprof/goroutine?debug=1", nil)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("goroutine profile: %w", err)
	}
	n, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("goroutine profile: unexpected first line %q", line)
	}
	return strconv.ParseInt(n, 10, 64)
}
