package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentchat/agentchat/internal/store"
)

// The store's serial writer (SQLite's one write connection), read at scrape
// time. rate(agentchat_store_writer_busy_seconds_total) is the fraction of
// wall time the connection was held, by part: near 1 the writer, not the
// cores, bounds the node's throughput.
var (
	writerBusy = prometheus.NewDesc("agentchat_store_writer_busy_seconds_total",
		"Time the store's single write connection was held, by part (events, runs, other, reads).", []string{"part"}, nil)
	writerTxs = prometheus.NewDesc("agentchat_store_writer_transactions_total",
		"Transactions (or reads) the store's single write connection served, by part.", []string{"part"}, nil)
	writerWrites = prometheus.NewDesc("agentchat_store_writer_writes_total",
		"Writes those transactions carried, by part: events for the event log, grouped calls for runs.", []string{"part"}, nil)
	writerWait = prometheus.NewDesc("agentchat_store_writer_wait_seconds_total",
		"Time callers waited for the store's single write connection while another held it.", nil, nil)
	writerWaits = prometheus.NewDesc("agentchat_store_writer_waits_total",
		"Waits for the store's single write connection.", nil, nil)
)

// writerCollector exports a SerialWriter's counts.
type writerCollector struct{ w store.SerialWriter }

func (c writerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- writerBusy
	ch <- writerTxs
	ch <- writerWrites
	ch <- writerWait
	ch <- writerWaits
}

func (c writerCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.w.WriterStats()
	for _, p := range st.Parts {
		ch <- prometheus.MustNewConstMetric(writerBusy, prometheus.CounterValue, p.Busy.Seconds(), p.Name)
		ch <- prometheus.MustNewConstMetric(writerTxs, prometheus.CounterValue, float64(p.Transactions), p.Name)
		ch <- prometheus.MustNewConstMetric(writerWrites, prometheus.CounterValue, float64(p.Writes), p.Name)
	}
	ch <- prometheus.MustNewConstMetric(writerWait, prometheus.CounterValue, st.Waited.Seconds())
	ch <- prometheus.MustNewConstMetric(writerWaits, prometheus.CounterValue, float64(st.Waits))
}
