#!/usr/bin/env bash
# tests/multi/idle.sh - 4 idle daemons (default settings: heartbeats every
# second) use less than 2% of one core in total over 5 s (user + system
# time from /proc/PID/schedstat).  A resource bound, kept generous.
T=multi-idle
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
N=4
t_up --mode loopback -n $N
sleep 1
declare -A c0
for i in $(seq 1 $N); do c0[$i]=$(nodes_cpu_ns "$(nodes_var PID "$i")"); done
t0=$(date +%s%N)
sleep 5
t1=$(date +%s%N)
total=0
for i in $(seq 1 $N); do
  c=$(nodes_cpu_ns "$(nodes_var PID "$i")")
  [ -n "$c" ] || t_fail "the daemon of node $i is gone"
  d=$(( c - c0[$i] ))
  t_note "node $i: $(( d / 1000 )) us of CPU"
  total=$(( total + d ))
done
wall=$(( t1 - t0 ))
pct=$(awk -v c="$total" -v w="$wall" 'BEGIN { printf "%.3f", 100 * c / w }')
t_note "4 idle daemons: $(( total / 1000 )) us of CPU in $(( wall / 1000000 )) ms = $pct% of one core"
awk -v p="$pct" 'BEGIN { exit !(p < 2.0) }' || t_fail "idle daemons used $pct% of a core (bound 2%)"
