package bench

import "testing"

// A minute's RSS is the least, median and greatest of its samples, and
// the growth beyond the first minute's range is the last minute's least
// less the first minute's greatest.
func TestSoakMinuteSummary(t *testing.T) {
	// goroutines, RSS, open files, anonymous, files
	first := summarise(1, [][5]int64{{10, 100, 5, 60, 40}, {12, 130, 5, 90, 40}, {11, 110, 6, 70, 40}})
	want := SoakMinute{Minute: 1, Samples: 3, Goroutines: 11, RSSKiB: 110, RSSMinKiB: 100, RSSMaxKiB: 130, OpenFiles: 5, AnonKiB: 70, FileKiB: 40}
	if first != want {
		t.Fatalf("first minute %+v, want %+v", first, want)
	}
	for _, c := range []struct {
		last           [][5]int64
		median, beyond int64
	}{
		{[][5]int64{{11, 105, 5, 65, 40}, {11, 125, 5, 85, 40}, {11, 115, 5, 75, 40}}, 5, -25}, // inside the swing
		{[][5]int64{{11, 140, 5, 90, 50}, {11, 150, 5, 95, 55}, {11, 145, 5, 92, 53}}, 35, 10}, // wholly above
	} {
		r := SoakResult{Minutes: []SoakMinute{first, summarise(2, c.last)}}
		if m, b := r.RSSGrowthKiB(); m != c.median || b != c.beyond {
			t.Errorf("growth %d, beyond %d; want %d, %d", m, b, c.median, c.beyond)
		}
	}
}
