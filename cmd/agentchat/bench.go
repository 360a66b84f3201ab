package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentchat/agentchat/internal/bench"
)

func benchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	streams := fs.Int("streams", 20, "concurrent chats")
	tokens := fs.Int("tokens", 50, "tokens per answer")
	pace := fs.Duration("pace", 20*time.Millisecond, "upstream pause between tokens")
	replicas := fs.Int("replicas", 1, "server processes to start (more than one needs --bus redis://…)")
	storeURL := fs.String("store", "", "AGENTCHAT_STORE for the servers (default: SQLite in a temp dir); a postgres:// URL naming no schema gets a schema of the run's own, dropped at the end")
	busURL := fs.String("bus", "", "AGENTCHAT_BUS for the servers (default: in-process); on Redis the run's keys are deleted at the end")
	ramp := fs.Duration("ramp", 0, "spread the streams' starts evenly over this long, e.g. 2s (default: all at once)")
	rounds := fs.Int("rounds", 1, "run the floor and the load this many times, alternately, and pool their samples (for few streams)")
	idle := fs.Bool("idle", false, "also measure memory per idle stream")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	profileDir := fs.String("profile", "", "write the first server's profiles of the load (cpu.pprof; heap.pprof, goroutine.pprof and a 2 s trace.out halfway) to this folder")
	profileStart := fs.Bool("profile-start", false, "with --profile: take the heap, goroutines and trace as the load starts, not halfway (where a burst's starts queue)")
	soakFor := fs.Duration("soak", 0, "keep --streams chats going for this long (e.g. 10m) and report the servers' goroutines, RSS and open files, first minute against last")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: agentchat bench [flags]\n\nStarts a fake OpenAI-compatible upstream and agentchat server processes pointed at it,\nopens concurrent chats, and reports latency over the upstream floor, throughput, CPU and memory.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errUsage
		}
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	res, err := bench.Run(ctx, bench.Config{
		Binary: self, Streams: *streams, Tokens: *tokens, Pace: *pace, Replicas: *replicas,
		Store: *storeURL, Bus: *busURL, BusPrefix: fmt.Sprintf("bench%d", time.Now().UnixNano()), IdleProbe: *idle, Ramp: *ramp, Rounds: *rounds, Soak: *soakFor, ProfileDir: *profileDir, ProfileStart: *profileStart, Log: stderr,
	})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
		if res.Errors > 0 {
			return fmt.Errorf("%d chats failed", res.Errors)
		}
		return nil
	}
	if sk := res.Soak; sk != nil {
		first, last := sk.First(), sk.Last()
		med, beyond := sk.RSSGrowthKiB()
		overlap := "the two minutes' ranges overlap"
		if beyond > 0 {
			overlap = "the last minute lies wholly above the first"
		}
		fmt.Fprintf(stdout, `soak: streams %d, tokens %d, pace %s, replicas %d, %.0f s
  chats                    %d (%d tokens)
  errors                   %d (refused %d, runs not succeeded %d, streams without their end %d)
  sampled every second; goroutines and open files are each minute's median, RSS its least / median / greatest sample
  minute                   goroutines   open files   RSS MiB least / median / greatest
  first (%d)               %10d   %10d   %7.1f / %7.1f / %7.1f
  last (%d)                %10d   %10d   %7.1f / %7.1f / %7.1f
  growth                   %+9.1f%%   %+9.1f%%   median %+.1f MiB (%+.1f%%); last least − first greatest %+.1f MiB: %s
  RSS's parts (medians)    anonymous %.1f → %.1f MiB, mapped files %.1f → %.1f MiB
  server CPU               %.2f → %.2f ms per 1000 tokens (%+.1f%%)
`, *streams, *tokens, *pace, *replicas, sk.Duration, sk.Chats, sk.Tokens,
			sk.Errors, sk.Refused, sk.FailedRuns, sk.NoEnd,
			first.Minute, first.Goroutines, first.OpenFiles, mib(first.RSSMinKiB), mib(first.RSSKiB), mib(first.RSSMaxKiB),
			last.Minute, last.Goroutines, last.OpenFiles, mib(last.RSSMinKiB), mib(last.RSSKiB), mib(last.RSSMaxKiB),
			growth(first.Goroutines, last.Goroutines), growth(first.OpenFiles, last.OpenFiles),
			mib(med), growth(first.RSSKiB, last.RSSKiB), mib(beyond), overlap,
			mib(first.AnonKiB), mib(last.AnonKiB), mib(first.FileKiB), mib(last.FileKiB),
			first.CPUmsPer1kTokens, last.CPUmsPer1kTokens, growth(first.CPUmsPer1kTokens, last.CPUmsPer1kTokens))
		if sk.Errors > 0 {
			return fmt.Errorf("%d chats failed", sk.Errors)
		}
		return nil
	}
	fmt.Fprintf(stdout, `streams %d, tokens %d, pace %s, ramp %s, replicas %d, rounds %d
  floor (upstream alone)   TTFB p50 %.2f ms  p99 %.2f ms   first text p50 %.2f ms  p99 %.2f ms
  through agentchat        TTFB p50 %.2f ms  p99 %.2f ms   first text p50 %.2f ms  p99 %.2f ms
  added to first text      p50 %.2f ms  p99 %.2f ms
  delivered                %d tokens in %.2f s = %.0f tokens/s (floor %.0f tokens/s: %.0f %%)
  errors                   %d (refused %d, runs not succeeded %d, streams without their end %d); listen queue overflows %s
  server CPU               %.0f ms = %.2f ms per 1000 tokens
  server memory            idle %.1f MiB, peak %.1f MiB, %.1f KiB per active stream`,
		*streams, *tokens, *pace, *ramp, *replicas, max(*rounds, 1),
		res.FloorTTFB.P50, res.FloorTTFB.P99, res.FloorFirstText.P50, res.FloorFirstText.P99,
		res.TTFB.P50, res.TTFB.P99, res.FirstText.P50, res.FirstText.P99,
		res.FirstText.P50-res.FloorFirstText.P50, res.FirstText.P99-res.FloorFirstText.P99,
		res.TokensDelivered, res.Elapsed, res.TokensPerSecond, res.FloorTokensPerSecond, 100*res.TokensPerSecond/max(res.FloorTokensPerSecond, 1),
		res.Errors, res.Refused, res.FailedRuns, res.NoEnd, overflows(res.ListenOverflows),
		res.ServerCPUms, res.CPUmsPer1kTokens, res.IdleRSSMiB, res.PeakRSSMiB, res.KiBPerActive)
	if *idle {
		fmt.Fprintf(stdout, ", %.1f KiB per idle stream", res.KiBPerIdle)
	}
	if res.ServerFirstTextMean > 0 {
		fmt.Fprintf(stdout, "\n  first text, mean         %.2f ms; the server's run start to its first text emitted %.2f ms (the model's included)",
			res.FirstTextMean, res.ServerFirstTextMean)
	}
	fmt.Fprintf(stdout, "\n  stream time              p50 %.2f ms  p99 %.2f ms (floor p50 %.2f ms  p99 %.2f ms); last text to end p50 %.2f ms  p99 %.2f ms",
		res.StreamTime.P50, res.StreamTime.P99, res.FloorStreamTime.P50, res.FloorStreamTime.P99, res.EndTail.P50, res.EndTail.P99)
	fmt.Fprintf(stdout, "\n  serial parts busy        %s\n", bench.SerialLine(res.Serial))
	if res.Errors > 0 {
		return fmt.Errorf("%d chats failed", res.Errors)
	}
	return nil
}

// overflows says the load's listen queue overflows, or that they could not
// be read.
func overflows(n int64) string {
	if n < 0 {
		return "unknown"
	}
	return fmt.Sprint(n)
}

// mib converts KiB to MiB for the report.
func mib(kib int64) float64 { return float64(kib) / 1024 }

// growth is the change from a to b in per cent.
func growth[T int64 | float64](a, b T) float64 {
	if a == 0 {
		return 0
	}
	return 100 * float64(b-a) / float64(a)
}
