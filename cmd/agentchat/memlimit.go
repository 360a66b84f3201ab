package main

import (
	"log/slog"
	"math"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memLimitRatio is the share of the container's or machine's memory given
// to the Go runtime as its soft limit: the rest is left to what the runtime
// does not count (SQLite's page cache lives in Go memory, but thread stacks
// and the mapped executable do not) and to the kernel.
const memLimitRatio = 0.9

// setMemoryLimit sets the Go runtime's soft memory limit (what GOMEMLIMIT
// sets) to memLimitRatio of the memory this process may use: its cgroup's
// limit in a container, the machine's otherwise. Without a limit the
// collector only paces by GOGC (heap doubling), so ten thousand streams'
// garbage could take a container past its limit before a collection; with
// one it collects harder as the limit nears instead of being killed. A
// GOMEMLIMIT in the environment is the operator's choice and is left alone
// (the runtime has applied it). The cgroup limit is read by automemlimit,
// which knows cgroup v1 and v2 and nested hierarchies.
func setMemoryLimit(getenv func(string) string, log *slog.Logger) {
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	from := "cgroup"
	limit, err := memlimit.FromCgroup()
	if err != nil || limit == 0 {
		from = "machine"
		limit, err = memlimit.FromSystem()
	}
	if err != nil || limit == 0 || limit > math.MaxInt64 {
		log.Debug("no memory limit found; the Go runtime's stays unset", "err", err)
		return
	}
	set := int64(float64(limit) * memLimitRatio)
	debug.SetMemoryLimit(set)
	log.Info("Go memory limit set", "GOMEMLIMIT", set, "from", from, "of", limit)
}
