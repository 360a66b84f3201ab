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
// goroutines, resident memory and open files minute by minute (each the
// median of the minute's samples, summed over the servers).
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

// SoakMinute holds one minute's medians.
type SoakMinute struct {
	Minute     int   `json:"minute"`
	Goroutines int64 `json:"goroutines"`
	RSSKiB     int64 `json:"rssKiB"`
	OpenFiles  int64 `json:"openFiles"`
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

// soakSample is how often a soak samples the servers.
const soakSample = 5 * time.Second

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
	var samples [][3]int64
	minute := 0
	flush := func() {
		if len(samples) == 0 {
			return
		}
		med := func(k int) int64 {
			v := make([]int64, len(samples))
			for i, s := range samples {
				v[i] = s[k]
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		m := SoakMinute{Minute: minute + 1, Goroutines: med(0), RSSKiB: med(1), OpenFiles: med(2)}
		res.Minutes = append(res.Minutes, m)
		logf("soak minute %d: goroutines %d, RSS %.1f MiB, open files %d, chats so far %d", m.Minute, m.Goroutines, float64(m.RSSKiB)/1024, m.OpenFiles, chats.Load())
		samples = samples[:0]
	}
	tick := time.NewTicker(soakSample)
	defer tick.Stop()
	var sampleErr error
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
			var s [3]int64
			for _, srv := range servers {
				g, err := goroutines(ctx, client, srv.debugURL)
				rss, _, err2 := srv.proc.memory()
				fds, err3 := srv.proc.proc.FileDescriptorsLen()
				if err := errors.Join(err, err2, err3); err != nil {
					sampleErr = err
					continue
				}
				s[0], s[1], s[2] = s[0]+g, s[1]+rss, s[2]+int64(fds)
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
