#!/usr/bin/env bash
# tests/multi/slow-consumer.sh - a slow consumer on one node throttles the
# senders on the others, memory stays bounded, nothing is lost.
#
# 4 nodes x 4 ranks; the 12 ranks of nodes 2-4 send 40000-byte messages
# only to the 4 ranks of node 1, whose callbacks sleep 2 ms per message.
# Far more data flows (12 x 1600 x 40000 B = 732 MiB) than any daemon may
# hold: the credits and the head-of-line wait must push back to shf_send()
# (every sender's send_blocked_ns > 0: tclient check_blocked=1), everything
# must be delivered exactly once (tclient's counts and epoch), and every
# daemon's peak RSS (VmHWM) must stay below batch_budget + 64 MiB.  (Most
# of an idle daemon's RSS is libfabric's own buffers; it is printed.  Under
# a sanitizer the RSS means nothing and the bound is not checked.)
T=multi-slow-consumer
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
N=4 K=4 W=16 n=1600 len=40000
budget_mib=8
t_up --mode loopback -n $N --daemon-args "--batch-budget ${budget_mib}m"
sleep 0.5
declare -A base
for i in $(seq 1 $N); do base[$i]=$(nodes_rss_kb "$(nodes_var PID "$i")"); done

export SHF_JOB=slow SHF_WORLD=$W
common=(traffic "n=$n" rounds=1 "minlen=$len" "maxlen=$len" srcs=4-15 dsts=0-3 seed=3
        timeout=100000 hold=release)
for r in $(seq 0 $((W - 1))); do
  if [ "$r" -lt $K ]; then extra=(slow_us=2000 slow_every=1)
  else extra=(check_blocked=1); fi
  SHF_RANK=$r nodes_client $((r / K + 1)) "rank$r" "$TCLIENT" "${common[@]}" "${extra[@]}"
done
NODES_SYNC_TIMEOUT_MS=105000 t_release_held $(seq 0 $((W - 1)))
nodes_wait_all || t_fail "a rank failed (lost, duplicated or misordered messages, or a sender never blocked)"

total_mib=$(( 12 * n * len / 1048576 ))
bound=$(( (budget_mib + 64) * 1024 ))
sanitized=0
# (not `ldd | grep -q`: under pipefail grep's early exit fails the pipeline)
case "$(ldd "$SHF_NODES_SHUFFLED" 2>/dev/null)" in *libasan* | *libtsan*) sanitized=1 ;; esac
for i in $(seq 1 $N); do
  hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$(nodes_var PID "$i")/status")
  t_note "node $i: RSS idle $(( base[$i] / 1024 )) MiB, peak $(( hwm / 1024 )) MiB, bound $(( bound / 1024 )) MiB ($total_mib MiB sent to node 1)"
  [ "$hwm" -le "$bound" ] || [ $sanitized = 1 ] || t_fail "node $i: peak RSS $hwm KiB above $bound KiB"
done
[ $sanitized = 0 ] || t_note "sanitizer build: the RSS bound is not checked"
for r in $(seq $K $((W - 1))); do grep -h "^rank $r: sent" "$NODES_TMP/logs/rank$r.log"; done
for i in 2 3 4; do t_note "node $i: credit stalls $(nodes_stat "$i" .daemon.credit_stalls)"; done
t_note "node 1: batches parked $(nodes_stat 1 .daemon.batches_parked)"
