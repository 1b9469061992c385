#!/usr/bin/env bash
# tests/multi/late-join.sh - partial membership: a node that boots late.
#
# 4 loopback nodes (static rendezvous), node 4's daemon deferred.  Nodes
# 1-3 show node 4 as "unknown" (never heard from: neither up nor a
# failure), and a job on nodes 1-3 runs to the end (exact counts, order,
# epochs): a job needs only the nodes that host its ranks.  Then node 4
# starts; every node shows every other up, and a job on all 4 nodes runs
# exactly.  No daemon but node 4 is (re)started.
#
# RDV (default static): dirfree runs the same with dir:PATH without N,
# where node 4 does not even have an id until it starts (absent, not
# unknown) and the others learn its address from its file when it first
# contacts them.
rdv=${1:-static}
T=multi-late-join$([ "$rdv" = static ] || echo "-$rdv")
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
N=4 K=2
t_up --mode loopback --rdv "$rdv" -n $N --defer 4 --daemon-args "--peer-timeout-ms 1000 --heartbeat-ms 200"
pids=$(for i in 1 2 3; do nodes_var PID "$i"; done | tr '\n' ' ')

# node 4 never started: unknown, on every node, even after several
# peer timeouts (it is not a failure)
sleep 2.5
for i in 1 2 3; do
  st=$(nodes_peer_state "$i" 3)
  if [ "$rdv" = static ]; then
    [ "$st" = unknown ] || t_fail "node $i sees node 4 (never started) as '$st', not 'unknown'"
  else
    [ -z "$st" ] || t_fail "node $i sees node 4 (no id claimed yet) as '$st', not absent"
  fi
done

run_job() {  # run_job NAME NODES...: K ranks on each node, tclient traffic
  local job=$1 i k r=0
  shift
  local w=$(( $# * K ))
  rm -f "$NODES_SYNC"/held.* "$NODES_SYNC"/release  # the previous job's
  for i in "$@"; do
    for k in $(seq 1 $K); do
      SHF_JOB=$job SHF_WORLD=$w SHF_RANK=$r nodes_client "$i" "$job$r" "$TCLIENT" \
        traffic n=1000 rounds=2 maxlen=400 hold=release timeout=40000
      r=$((r + 1))
    done
  done
  t_release_held $(seq 0 $((w - 1)))
  nodes_wait_all || t_fail "job $job failed"
}
run_job three 1 2 3
t_note "job on nodes 1-3 while node 4 is unknown: exact, 2 epochs: ok"

# a job whose world needs a rank nobody starts: shf_open times out naming
# the missing rank, and the node it may be waiting for (not up; static only:
# with dirfree node 4 has no id yet)
[ "$rdv" = static ] && SHF_JOB=needs4 SHF_WORLD=2 SHF_RANK=0 nodes_client 1 needs4 "$TCLIENT" open expect=ETIMEDOUT \
  detail="nodes not up: 3 (" timeout=1500
nodes_wait_all || t_fail "shf_open did not time out naming node 4 as not up"
[ "$rdv" = static ] && t_note "a world that needs node 4: -ETIMEDOUT naming missing rank 1 and node 3 (node 4, unknown) as not up"

t0=$(nodes_now_ms)
nodes start --node 4 || t_fail "cannot start node 4"
all_up() {
  local i p
  for i in $(seq 1 $N); do
    for p in $(seq 0 $((N - 1))); do
      [ $p = $((i - 1)) ] && continue
      [ "$(nodes_peer_state "$i" $p)" = up ] || return 1
    done
  done
}
t_until 20000 "every node to see every other up" all_up
t_note "node 4 started: every node sees every other up $(( $(nodes_now_ms) - t0 )) ms after its start"
run_job four 1 2 3 4
now=$(for i in 1 2 3; do nodes_var PID "$i"; done | tr '\n' ' ')
[ "$now" = "$pids" ] || t_fail "a daemon of nodes 1-3 restarted ($pids -> $now)"
t_note "job on all 4 nodes after the late join: exact; nodes 1-3 never restarted: ok"
