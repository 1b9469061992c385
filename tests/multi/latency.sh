#!/usr/bin/env bash
# tests/multi/latency.sh - a measurement, not a test: one-way latency of
# one small message between two simulated nodes on an idle system, for
# linger_us in $LINGERS (default "100 1000"); the design's expectation is
# <= linger_us + 1 ms.  Loopback nodes; both ranks use the delivery thread.
#   meson test -C BUILD --benchmark multi-latency -v    (or run it directly)
T=multi-latency
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
for lg in ${LINGERS:-100 1000}; do
  t_up --mode loopback -n 2 --daemon-args "--linger-us $lg"
  export SHF_JOB="lat$lg" SHF_WORLD=2
  rm -f "$NODES_SYNC"/*
  SHF_RANK=0 nodes_client 1 "s$lg" "$MNCLIENT" latency count=${COUNT:-300} gap_ms=5 size=64
  SHF_RANK=1 nodes_client 2 "r$lg" "$MNCLIENT" latency count=${COUNT:-300} gap_ms=5 size=64 \
    bound_us=$((lg + 1000))
  nodes_wait_all || t_fail "latency run failed"
  echo "linger_us $lg:"
  sed 's/^/    /' "$NODES_TMP/logs/r$lg.log"
  nodes_down
done
