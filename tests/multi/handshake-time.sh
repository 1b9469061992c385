#!/usr/bin/env bash
# tests/multi/handshake-time.sh - wall time of the peer handshake, with and
# without a cluster key (a benchmark: prints, asserts nothing about time).
#
# RUNS times each: two loopback nodes (static rendezvous); node 2 is
# started once node 1 is ready, so node 2's first heartbeat (sent right
# after its "rendezvous ... done" line) opens the session.  From the
# daemons' logs (millisecond timestamps): node 2's first hello to node 2
# seeing node 1 up, and to node 1 seeing node 2 up.  Prints each run and
# the medians.
T=multi-handshake-time
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
RUNS=${RUNS:-7}
ms_of() { # the millisecond timestamp (of the day) of the first line matching $2 in $1
  local l
  l=$(grep -m1 -- "$2" "$1") || return 1
  l=${l%%Z *}; l=${l#*T}
  awk -v t="$l" 'BEGIN { split(t, a, ":"); printf "%d\n", (a[1] * 3600 + a[2] * 60 + a[3]) * 1000 + 0.5 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# one run in a subshell (its own directory, cleaned at its exit): prints
# "A B", node 2's and node 1's milliseconds from node 2's first hello to up
one_run() (
  nodes_init "$T"
  args=(--mode loopback -n 2 --defer 2 --daemon-args "--heartbeat-ms 1000")
  [ "$1" = none ] && args+=(--no-key)
  t_up "${args[@]}" >/dev/null
  "$NODES_SCRIPT" start --dir "$NODES_DIR" --node 2 >/dev/null || t_fail "node 2 did not start"
  t_until 10000 "both up" eval 't_peer_is 1 1 up && t_peer_is 2 0 up'
  l1=$(nodes_var LOG 1) l2=$(nodes_var LOG 2)
  t0=$(ms_of "$l2" "rendezvous .* done") || t_fail "no rendezvous line"
  up2=$(ms_of "$l2" "peer node 0 .* up") up1=$(ms_of "$l1" "peer node 1 .* up")
  echo "$((up2 - t0)) $((up1 - t0))"
)
for mode in key none; do
  a=() b=()
  for r in $(seq 1 "$RUNS"); do
    out=$(one_run "$mode") || t_fail "run $r ($mode) failed"
    read -r x y <<< "$out"
    a+=("$x") b+=("$y")
    t_note "$mode run $r: node 2 sees node 1 up after $x ms, node 1 sees node 2 up after $y ms"
  done
  t_note "$mode: median over $RUNS runs: node 2 $(printf '%s\n' "${a[@]}" | median) ms, node 1 $(printf '%s\n' "${b[@]}" | median) ms"
done
