//go:build !unix

package bench

// clockTicks: without a proc file system there is no CPU time to convert.
func clockTicks() float64 { return 100 }
