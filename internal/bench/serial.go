package bench

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Serial is one part of a server that every stream passes through one at
// a time, and how busy the load kept it: a part near 1 bounds the node's
// throughput whatever its cores, and the load's tokens/s over Busy is
// about the most it could carry at this mix of starts and tokens.
type Serial struct {
	// Name is "store writer" (SQLite's one write connection, all of its
	// work), "store writer: PART" (one kind of that work: events, runs,
	// other, reads, checkpoint) or "event log writer" (the goroutine that commits the
	// event log's batches; its busy time includes its wait for the store).
	Name string `json:"name"`
	// Busy is the fraction of the load's wall time it was held, summed
	// over the servers (each has its own).
	Busy float64 `json:"busy"`
	// PerSecond is the transactions (or commits) it made per second, and
	// WritesPerSecond the writes they carried (events for the event log).
	PerSecond       float64 `json:"perSecond"`
	WritesPerSecond float64 `json:"writesPerSecond,omitempty"`
}

// metricsSample is the counters of one scrape, by series (name and labels
// as in the text format).
type metricsSample map[string]float64

// scrape reads the counters of the server at url (its metrics listener).
func scrape(ctx context.Context, client *http.Client, url string) (metricsSample, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/metrics: %s", url, resp.Status)
	}
	m := metricsSample{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "agentchat_store_writer_") && !strings.HasPrefix(line, "agentchat_event_log_commit_seconds_") &&
			!strings.HasPrefix(line, ttftSeries+"_sum") && !strings.HasPrefix(line, ttftSeries+"_count") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m, sc.Err()
}

// serialParts is what the servers' serial parts did between the scrapes
// before and after a load of secs seconds, summed over the servers.
func serialParts(before, after []metricsSample, secs float64) []Serial {
	d := metricsSample{}
	for i := range after {
		for k, v := range after[i] {
			d[k] += v - before[i][k]
		}
	}
	if secs <= 0 {
		return nil
	}
	var out []Serial
	const busy, txs, writes = "agentchat_store_writer_busy_seconds_total", "agentchat_store_writer_transactions_total", "agentchat_store_writer_writes_total"
	var parts []string
	for k := range d {
		if p, ok := strings.CutPrefix(k, busy+`{part="`); ok {
			parts = append(parts, strings.TrimSuffix(p, `"}`))
		}
	}
	if len(parts) > 0 {
		sort.Strings(parts)
		all := Serial{Name: "store writer"}
		var each []Serial
		for _, p := range parts {
			l := `{part="` + p + `"}`
			s := Serial{Name: "store writer: " + p, Busy: d[busy+l] / secs, PerSecond: d[txs+l] / secs, WritesPerSecond: d[writes+l] / secs}
			all.Busy += s.Busy
			all.PerSecond += s.PerSecond
			each = append(each, s)
		}
		out = append(append(out, all), each...)
	}
	if n, ok := d["agentchat_event_log_commit_seconds_count"]; ok {
		out = append(out, Serial{Name: "event log writer", Busy: d["agentchat_event_log_commit_seconds_sum"] / secs, PerSecond: n / secs})
	}
	return out
}

// SerialLine is the serial parts in one line of the report.
func SerialLine(parts []Serial) string {
	if len(parts) == 0 {
		return "(not exported by this binary)"
	}
	var b strings.Builder
	for i, p := range parts {
		name, sub := p.Name, false
		if n, ok := strings.CutPrefix(p.Name, "store writer: "); ok {
			name, sub = n, true
		}
		switch {
		case i == 0:
		case sub && !strings.HasPrefix(parts[i-1].Name, "store writer: "):
			b.WriteString(" (")
		case sub:
			b.WriteString(", ")
		case strings.HasPrefix(parts[i-1].Name, "store writer: "):
			b.WriteString("), ")
		default:
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.1f %%", name, 100*p.Busy)
		switch {
		case !sub:
			fmt.Fprintf(&b, " %.0f/s", p.PerSecond)
		case p.PerSecond > 0:
			fmt.Fprintf(&b, " %.1f per tx", p.WritesPerSecond/p.PerSecond)
		}
	}
	if strings.HasPrefix(parts[len(parts)-1].Name, "store writer: ") {
		b.WriteString(")")
	}
	return b.String()
}

// ttftSeries is the servers' histogram of a run's start to its first text
// emitted (telemetry: run_time_to_first_token_seconds).
const ttftSeries = "agentchat_run_time_to_first_token_seconds"

// serverFirstText is the mean, in milliseconds, of the servers' own time
// from a run's start to its first text emitted, over the runs that emitted
// their first text between the scrapes; 0 when none did (or the servers
// export no such histogram).
func serverFirstText(before, after []metricsSample) float64 {
	var sum, n float64
	for i := range after {
		for k, v := range after[i] {
			switch {
			case strings.HasPrefix(k, ttftSeries+"_sum"):
				sum += v - before[i][k]
			case strings.HasPrefix(k, ttftSeries+"_count"):
				n += v - before[i][k]
			}
		}
	}
	if n <= 0 {
		return 0
	}
	return 1000 * sum / n
}
