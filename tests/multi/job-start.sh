#!/usr/bin/env bash
# tests/multi/job-start.sh - starting a job touches only its nodes (issue
# 25, item 2; docs/protocol-wire.md, "Job start").
#
# 6 loopback nodes with lazy peers (peer_idle_ms 600): every peer goes
# idle first.  Then two jobs of 2 ranks per node on nodes 2, 4 and 5
# (k = 3), one after the other:
#   - je, whose home (the rendezvous hash of daemon/jobhome.c) is node 3,
#     outside the job;
#   - ja, whose home is node 5, one of its nodes.
# For each, counted from `shufflectl stats` before and after:
#   - the job start messages (JOB_JOIN, JOB_MAP, JOB_DENY: join_msgs_out)
#     sent by all daemons together are at most 3k (the home's way costs at
#     most 2k; the all-to-all announcements of wire version 5 cost
#     k(N - 1) = 15 here);
#   - the job's home holds its record while it runs (home_jobs 1 there, 0
#     elsewhere);
#   - every node outside the job but its home sent and received no job
#     start message, woke no peer and was woken by none (peers_woken and
#     wakes unchanged), and still sees every peer idle while the job runs;
#   - the job is exact (tclient traffic: counts, order, epochs);
#   - its end (leave_msgs_out/_in; every JOB_LEAVE sent arrives; the job
#     ends on each of its nodes and its home drops the record): each
#     node's last window of leaves goes to the home only, which forwards
#     them to the job's nodes: 2k = 6 for je, 2(k - 1) = 4 for ja; at most
#     3k = 9.  One JOB_LEAVE per rank to every node (18 and 12) fails it.
T=multi-job-start
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
N=6 K=2
JOB_NODES="2 4 5"
k=3
t_up --mode loopback -n $N --daemon-args "--peer-idle-ms 600 --heartbeat-ms 200 --peer-timeout-ms 1500"

all_idle() { # every node sees every peer idle
  local i p
  for i in $(seq 1 $N); do
    for p in $(seq 1 $N); do
      [ "$p" = "$i" ] && continue
      [ "$(nodes_peer_state "$i" $((p - 1)))" = idle ] || return 1
    done
  done
}
peers_idle_of() { # I: node I sees every peer idle
  local p
  for p in $(seq 1 $N); do
    [ "$p" = "$1" ] && continue
    [ "$(nodes_peer_state "$1" $((p - 1)))" = idle ] || return 1
  done
}
counters() { # I: "join_msgs_out join_msgs_in peers_woken wakes home_jobs leave_msgs_out leave_msgs_in"
  nodes_json "$1" stats |
    jq -r '.daemon | "\(.join_msgs_out) \(.join_msgs_in) \(.peers_woken) \(.wakes) \(.home_jobs) \(.leave_msgs_out) \(.leave_msgs_in)"'
}
# leaves_since: "sent received" JOB_LEAVEs of all daemons since before[]
leaves_since() {
  local i lo=0 li=0 a b c d
  for i in $(seq 1 $N); do
    read -r _ _ _ _ _ a b <<<"${before[$i]}"
    read -r _ _ _ _ _ c d <<<"$(counters "$i")"
    lo=$((lo + c - a)) li=$((li + d - b))
  done
  echo "$lo $li"
}
leaves_arrived() { read -r lo li <<<"$(leaves_since)"; [ "$lo" = "$li" ] && [ "$lo" -gt 0 ]; }
in_job() { [[ " $JOB_NODES " == *" $1 "* ]]; }
home_empty() { [ "$(counters "$1" | awk '{ print $5 }')" = 0 ]; }

# run NAME HOME: the job on JOB_NODES, checked as above; HOME is the node
# (1-based) the hash picks for NAME among the 6 nodes
run() {
  local name=$1 home=$2 r=0 i x before=() after=() sum=0 c
  t_until 20000 "every peer idle before job $name" all_idle
  for i in $(seq 1 $N); do before[$i]=$(counters "$i"); done
  rm -f "$NODES_SYNC"/held.* "$NODES_SYNC"/release
  export SHF_JOB=$name SHF_WORLD=$((k * K))
  for i in $JOB_NODES; do
    for x in $(seq 1 $K); do
      SHF_RANK=$r nodes_client "$i" "$name$r" "$TCLIENT" traffic n=300 rounds=2 seed=5 \
        hold=release timeout=30000
      r=$((r + 1))
    done
  done
  for x in $(seq 0 $((r - 1))); do
    nodes_sync_wait "held.$x" || { nodes_sync_post release; t_fail "job $name: rank $x never finished"; }
  done
  # while it runs: the home holds the record, the others none; the nodes
  # outside the job and its home still see every peer idle
  for i in $(seq 1 $N); do
    c=$(counters "$i" | awk '{ print $5 }')
    if [ "$i" = "$home" ]; then
      [ "$c" = 1 ] || t_fail "job $name: its home, node $i, holds $c home records (expected 1)"
    else
      [ "$c" = 0 ] || t_fail "job $name: node $i (not its home) holds $c home records"
    fi
    if ! in_job "$i" && [ "$i" != "$home" ]; then
      peers_idle_of "$i" || t_fail "job $name: node $i, outside the job, sees a peer that is not idle: $(nodes_json "$i" peers | jq -c '[.peers[] | {node, state}]')"
    fi
  done
  nodes_sync_post release
  nodes_wait_all || t_fail "job $name failed (logs above)"
  # its end, measured (every JOB_LEAVE sent arrives)
  t_until 10000 "job $name: every JOB_LEAVE sent to arrive" leaves_arrived
  # and the job ended on each of its nodes (each heard every rank's leave)
  # and at its home (no record left)
  for i in $JOB_NODES; do
    t_until 10000 "job $name to end on node $i" grep -q "job $name ended" "$(nodes_var LOG "$i")"
  done
  t_until 10000 "job $name: its home, node $home, to drop its record" home_empty "$home"
  t_until 10000 "job $name: every JOB_LEAVE sent to arrive" leaves_arrived
  local leaves lo ideal
  leaves=$(leaves_since)
  # each node's last window to the home, which forwards it to the job's
  # nodes: 2k, 2(k - 1) when the home is one of them
  read -r lo _ <<<"$leaves"
  ideal=$((2 * k))
  in_job "$home" && ideal=$((2 * (k - 1)))
  [ "$lo" -le $((3 * k)) ] ||
    t_fail "job $name: $lo JOB_LEAVEs at its end, more than 3k = $((3 * k)) (through the home: $ideal)"
  for i in $(seq 1 $N); do after[$i]=$(counters "$i"); done
  local per=""
  for i in $(seq 1 $N); do
    read -r o0 n0 w0 k0 _ <<<"${before[$i]}"
    read -r o1 n1 w1 k1 _ <<<"${after[$i]}"
    sum=$((sum + o1 - o0))
    per+="$((o1 - o0)) "
    if ! in_job "$i" && [ "$i" != "$home" ]; then
      [ "$o1" = "$o0" ] && [ "$n1" = "$n0" ] ||
        t_fail "job $name: node $i, outside the job and not its home, sent $((o1 - o0)) and received $((n1 - n0)) job start messages"
      [ "$w1" = "$w0" ] && [ "$k1" = "$k0" ] ||
        t_fail "job $name: node $i, outside the job and not its home, woke or was woken (peers_woken $w0 -> $w1, wakes $k0 -> $k1)"
    fi
  done
  [ "$sum" -ge 1 ] || t_fail "job $name: no job start message counted at all"
  [ "$sum" -le $((3 * k)) ] ||
    t_fail "job $name: $sum job start messages on $k of $N nodes (per node: $per), more than 3k = $((3 * k))"
  t_note "job $name on nodes $JOB_NODES (home node $home): exact; $sum job start messages in all (per node: ${per% }; bound 3k = $((3 * k)), all-to-all k(N-1) = $((k * (N - 1)))); nodes outside it and its home: nothing sent or received, no wake; its end: JOB_LEAVEs sent and received: $leaves (bound 3k = $((3 * k)); through the home, nodes ending together: $ideal)"
}

run je 3
run ja 5
t_daemons_alive
