#!/usr/bin/env bash
# tests/multi/route2d-measure.sh [NODES...] - routing=direct against 2d
# (issue 14 item 5), in one run: for each node count (default 16 32) and
# each routing, N simulated nodes (loopback, static rendezvous) with one
# tclient rank each run an all-to-all (traffic: N_MSGS messages of 48-600
# B per rank to pseudo-random ranks, 2 rounds, each with a flush and an
# epoch; exact counts checked by tclient).  Printed, one row each:
#   links   other nodes each daemon has established TCP connections with
#           (ss, the kernel's view: max and mean over the daemons), and
#           the bound (2d: (cols - 1) + (rows - 1); direct: N - 1);
#   msgs/s  messages delivered in all / the time from the first rank's
#           open (world complete) to the last rank's end of traffic;
#   fwd     messages forwarded by intermediates (stats fwd_msgs, all nodes).
#   sends   the fabric sends those took (stats fwd_sends: a FWD alone or a
#           FWD_BUNDLE of several; '-' for a daemon without the counter,
#           which sends each FWD alone), and sends per forwarded message.
# Timing is noisy on a shared machine: compare direct against 2d of the
# same run (the ratio column), not across runs.  A benchmark (meson test
# --benchmark multi-route2d-measure), not a test: it asserts only that
# every run completed exactly.
T=multi-route2d-measure
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(16 32)
N_MSGS=${ROUTE2D_MSGS:-2000}
ms_of() { date -r "$1" +%s%3N; }
rows=()
for N in "${sizes[@]}"; do
  declare -A rate=()
  for routing in direct 2d; do
    t_up --mode loopback -n "$N" --lifetime 900 --daemon-args "--routing $routing --heartbeat-ms 500 --peer-timeout-ms 10000"
    export SHF_JOB=m$N$routing
    for r in $(seq 0 $((N - 1))); do
      SHF_RANK=$r SHF_WORLD=$N nodes_client $((r + 1)) "m$r" "$TCLIENT" traffic n="$N_MSGS" \
        rounds=2 minlen=48 maxlen=600 seed=5 post=open hold=release timeout=120000
    done
    NODES_SYNC_TIMEOUT_MS=300000 nodes_sync_wait $(for r in $(seq 0 $((N - 1))); do echo "held.$r"; done) ||
      t_fail "N=$N $routing: the ranks did not finish"
    t0=$(for r in $(seq 0 $((N - 1))); do ms_of "$NODES_SYNC/open.$r"; done | sort -n | head -n1)
    t1=$(for r in $(seq 0 $((N - 1))); do ms_of "$NODES_SYNC/held.$r"; done | sort -n | tail -n1)
    maxc=0 sumc=0 fwd=0 sends=0
    for i in $(seq 1 "$N"); do
      ip=$(nodes_var ADDR "$i"); ip=${ip%:*}
      c=$(ss -tnH state established "( src $ip )" 2>/dev/null | awk '{print $4}' |
          sed 's/:[0-9]*$//' | grep -v "^$ip\$" | sort -u | wc -l)
      [ "$c" -gt "$maxc" ] && maxc=$c
      sumc=$((sumc + c))
      fwd=$((fwd + $(nodes_stat "$i" .daemon.fwd_msgs)))
      v=$(nodes_stat "$i" .daemon.fwd_sends)
      if [[ "$v" =~ ^[0-9]+$ ]] && [ "$sends" != - ]; then sends=$((sends + v)); else sends=-; fi
    done
    nodes_sync_post release
    nodes_wait_all || t_fail "N=$N $routing: a rank failed"
    msgs=$(cat "$NODES_TMP"/logs/m*.log | sed -n 's/^rank [0-9]*: sent [0-9]* delivered \([0-9]*\).*/\1/p' |
           awk '{ s += $1 } END { print s + 0 }')
    cols=1; while [ $((cols * cols)) -lt "$N" ]; do cols=$((cols + 1)); done
    rws=$(( (N + cols - 1) / cols ))
    bound=$([ $routing = 2d ] && echo $((cols - 1 + rws - 1)) || echo $((N - 1)))
    el=$((t1 - t0))
    rate[$routing]=$(awk -v m="$msgs" -v e="$el" 'BEGIN { printf "%.0f", m / (e / 1000) }')
    mean=$(awk -v s=$sumc -v n="$N" 'BEGIN { printf "%.1f", s / n }')
    ratio=$([ $routing = 2d ] && awk -v a="${rate[2d]}" -v b="${rate[direct]}" 'BEGIN { printf "%.2f", a / b }' || echo 1)
    per=$([ "$sends" != - ] && [ "$fwd" -gt 0 ] && awk -v a="$sends" -v b="$fwd" 'BEGIN { printf "%.3f", a / b }' || echo -)
    rows+=("| $N | $routing | $maxc | $mean | $bound | $msgs | $el | ${rate[$routing]} | $ratio | $fwd | $sends | $per |")
    t_note "N=$N routing=$routing: links max $maxc mean $mean (bound $bound), $msgs msgs in $el ms, ${rate[$routing]} msgs/s, forwarded $fwd in $sends sends"
    nodes_down >/dev/null 2>&1
    rm -f "$NODES_SYNC"/* "$NODES_TMP"/logs/m*.log
  done
done
echo
echo "| nodes | routing | links max | links mean | bound | messages | ms | msgs/s | 2d/direct | forwarded | fwd sends | sends/fwd |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
