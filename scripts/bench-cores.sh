#!/usr/bin/env bash
# bench-cores.sh: does the embedded default use a many-core machine's cores?
#
# Builds agentchat and runs `agentchat bench` (the floor, then the same load
# through the server: SQLite, in-process bus, every event persisted) at 1000
# streams once and at 5000 streams twice, 200 tokens at 20 ms, all streams
# starting at once, then prints one table. Meant for a 16-core machine; on
# any machine it finishes within about 6 minutes (each run is cut at
# RUN_LIMIT seconds and reported as such).
#
#   scripts/bench-cores.sh                 # from the repository root
#   STREAMS="5000 5000 5000" scripts/bench-cores.sh
#   AGENTCHAT_BIN=./agentchat scripts/bench-cores.sh   # no Go on this machine
#   PROFILE_DIR=/tmp/prof scripts/bench-cores.sh       # the last run's profiles
#   BASE_BIN=./agentchat-base AGENTCHAT_BIN=./agentchat STREAMS="5000 5000 5000" \
#     scripts/bench-cores.sh   # each load run by base, then by this binary
#   EXTRA="--rounds 10" STREAMS="1 20" scripts/bench-cores.sh   # more bench flags
#   RESULTS_DIR=/tmp/runs scripts/bench-cores.sh       # every run's full report
#
# With PROFILE_DIR, the last run writes the server's CPU, heap, goroutine and
# mutex profiles there; `go tool pprof -tags PROFILE_DIR/cpu.pprof` gives
# the CPU of the labelled serial goroutines (role=event-log, sqlite_writer).
#
# Aim (issue 25): at 5000 streams the server delivers >= 90 % of the floor's
# tokens/s. The server's CPU use is reported as cores busy on average, and
# the parts every stream passes through one at a time (SQLite's one write
# connection, by kind of work, and the event log's writer) as the fraction
# of the load's wall time each was busy: one near 100 % is what serialises.
set -euo pipefail

cd "$(dirname "$0")/.."
STREAMS=${STREAMS:-"1000 5000 5000"}
TOKENS=${TOKENS:-200}
PACE=${PACE:-20ms}
RUN_LIMIT=${RUN_LIMIT:-100}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
t0=$(date +%s)

# 5000 streams hold ~10 000 sockets in the load generator and as many in
# the server; Go raises its soft limit to the hard one, this raises the hard
# one where the shell may.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# AGENTCHAT_BIN names a binary built elsewhere (a machine without Go);
# BASE_BIN one to compare it with.
if [ -n "${BASE_BIN:-}" ]; then
  cp "$BASE_BIN" "$out/base"
fi
if [ -n "${AGENTCHAT_BIN:-}" ]; then
  cp "$AGENTCHAT_BIN" "$out/agentchat"
else
  echo "building agentchat ($(go version | cut -d' ' -f3))" >&2
  go build -o "$out/agentchat" ./cmd/agentchat
fi
echo "$(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)" >&2

# With BASE_BIN, each load is run by base first, then by this binary:
# alternating pairs, so the machine's drift falls on both alike.
who=(agentchat)
[ -n "${BASE_BIN:-}" ] && who=(base agentchat)
runs=$(($(echo $STREAMS | wc -w) * ${#who[@]}))
i=0
for n in $STREAMS; do
  for bin in "${who[@]}"; do
    i=$((i + 1))
    echo "run $i: $n streams ($bin)" >&2
    echo "$n $bin" >"$out/run$i.what"
    extra=()
    if [ -n "${PROFILE_DIR:-}" ] && [ "$i" = "$runs" ]; then
      extra=(--profile "$PROFILE_DIR")
    fi
    set +e
    # shellcheck disable=SC2086 # EXTRA is a list of flags
    timeout --signal=INT --kill-after=10 "$RUN_LIMIT" \
      "$out/$bin" bench --streams "$n" --tokens "$TOKENS" --pace "$PACE" ${EXTRA:-} "${extra[@]}" >"$out/run$i.txt" 2>"$out/run$i.log"
    echo $? >"$out/run$i.rc"
    set -e
  done
done

printf '\n%s, %s cores, %s tokens at %s, all streams at once, embedded store, every event persisted%s\n\n' \
  "$(date -u +%FT%TZ)" "$(nproc)" "$TOKENS" "$PACE" "${EXTRA:+, bench flags $EXTRA}"
printf '| run | binary | streams | tokens/s (floor) | share of floor | errors | added first text p50 / p99 | CPU per 1000 tokens | cores busy | peak RSS | per active stream | serial parts busy |\n'
printf '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n'
for i in $(seq 1 "$runs"); do
  read -r n bin <"$out/run$i.what"
  rc=$(cat "$out/run$i.rc")
  if ! grep -q '^  delivered' "$out/run$i.txt"; then
    why="exit $rc"
    [ "$rc" = 124 ] && why="cut at ${RUN_LIMIT} s"
    printf '| %d | %s | %d | (%s: %s) | | | | | | | | |\n' "$i" "$bin" "$n" "$why" "$(tail -n 1 "$out/run$i.log" | cut -c1-80)"
    continue
  fi
  awk -v run="$i" -v n="$n" -v bin="$bin" '
    /^  added to first text/ { p50 = $6; p99 = $9 }
    /^  delivered/ {
      secs = $5; tps = $8; floor = $11; share = $13
    }
    /^  errors/ { errs = $2 }
    /^  server CPU/ { cpu = $3; per1k = $6 }
    /^  server memory/ { peak = $7; active = $9 }
    /^  serial parts busy/ { serial = $0; sub(/^  serial parts busy +/, "", serial) }
    END {
      cores = (secs > 0) ? cpu / 1000 / secs : 0
      printf "| %d | %s | %d | %s (%s) | %s %% | %s | %s / %s ms | %s ms | %.1f | %s MiB | %s KiB | %s |\n",
        run, bin, n, tps, floor, share, errs, p50, p99, per1k, cores, peak, active, serial
    }' "$out/run$i.txt"
done
printf '\ntotal %d s\n' "$(($(date +%s) - t0))"
# The table leaves out the stream times, the ends' tail and the first
# text's own figures; each run's whole report has them.
if [ -n "${RESULTS_DIR:-}" ]; then
  mkdir -p "$RESULTS_DIR"
  for i in $(seq 1 "$runs"); do
    { cat "$out/run$i.what" "$out/run$i.txt"; tail -n 20 "$out/run$i.log"; } >"$RESULTS_DIR/run$i.txt"
  done
fi
