package bench

import "testing"

// TestServerFirstText averages the servers' first-text histogram over the
// runs between the scrapes, summed over servers and engines.
func TestServerFirstText(t *testing.T) {
	sum, count := ttftSeries+`_sum{engine="local"}`, ttftSeries+`_count{engine="local"}`
	before := []metricsSample{{sum: 1, count: 10}, {}}
	after := []metricsSample{{sum: 1.5, count: 30}, {sum: 0.1, count: 2, ttftSeries + `_bucket{engine="local",le="0.025"}`: 2}}
	if got := serverFirstText(before, after); got != 1000*0.6/22 {
		t.Errorf("serverFirstText = %v ms, want %v", got, 1000*0.6/22)
	}
	if got := serverFirstText(before, before); got != 0 {
		t.Errorf("serverFirstText with no runs = %v, want 0", got)
	}
}
