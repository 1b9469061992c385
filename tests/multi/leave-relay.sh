#!/usr/bin/env bash
# tests/multi/leave-relay.sh - the last leaves of a job's nodes go through
# its home, which forwards them (docs/protocol-wire.md, "Leaves through the
# home"); when the home fails, nothing is lost: the job still ends on every
# node.
#
# 3 loopback nodes (peer timeout 1 s).  Jobs of world 2: rank 0 on node 1,
# rank 1 on node 2 (one rank per node: each node's part ends in one window,
# which always goes through the home); the rendezvous hash (daemon/jobhome.c) makes
# node 3, outside the jobs, the home of both names used here (hy, h4; the
# test checks it).
#   - stopped: while hy runs, node 3's daemon is stopped (SIGSTOP); the
#     ranks close: nodes 1 and 2 send their last leaves to node 3, which
#     forwards nothing.  Once they see node 3 down, each sends what it sent
#     through it to the other directly, and asks the other for its
#     departed ranks: hy ends on nodes 1 and 2.  Without that (leaves that
#     went to a home that died lost) hy never ends there.
#   - restarted: while h4 runs, node 3's daemon is killed and started again
#     (a new session, a home with no map of h4); the ranks close: nodes 1
#     and 2 send their leaves directly (none through a home that sent them
#     no map in this session), h4 ends on both, and node 3 keeps no record.
T=multi-leave-relay
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
t_up --mode loopback -n 3 --daemon-args "--peer-timeout-ms 1000 --heartbeat-ms 200"
t_all_up 20000
homes() { nodes_stat "$1" '.daemon.home_jobs' 2>/dev/null || echo x; }
ended() { grep -q "job $1 ended" "$(nodes_var LOG "$2")"; }
start() { # JOB: its 2 ranks, held when done
  local r
  rm -f "$NODES_SYNC"/held.* "$NODES_SYNC"/release
  for r in 0 1; do
    SHF_JOB=$1 SHF_WORLD=2 SHF_RANK=$r nodes_client $((r + 1)) "$1.$r" "$TCLIENT" traffic \
      n=200 rounds=2 seed=7 hold=release timeout=30000
  done
  for r in 0 1; do
    nodes_sync_wait "held.$r" || { nodes_sync_post release; t_fail "$1: rank $r never finished"; }
  done
  grep -q "job $1: home of the job" "$(nodes_var LOG 3)" ||
    t_fail "$1: node 3 is not its home (the rendezvous hash changed?): the test needs a home outside the job"
}

# stopped
start hy
p3=$(nodes_var PID 3)
kill -STOP "$p3" || t_fail "cannot stop node 3's daemon"
# whatever happens, it runs again before the nodes are brought down
trap 'rc=$?; kill -CONT "$p3" 2>/dev/null; (exit $rc); nodes_cleanup' EXIT
T_KILLED=3
nodes_sync_post release
nodes_wait_all || t_fail "hy failed"
for i in 1 2; do
  t_until 20000 "hy to end on node $i (its home stopped)" ended hy "$i"
done
# (each once it sees the home down, which may be after the other's leaves
# ended the job there)
for i in 1 2; do
  t_until 10000 "hy: node $i to send directly what it had sent through its lost home" \
    grep -q "sent through home node 2 go to node(s) $((2 - i)) directly" "$(nodes_var LOG "$i")"
done
kill -CONT "$p3"
trap nodes_cleanup EXIT
T_KILLED=
t_all_up 20000
t_note "hy: its home stopped while its ranks closed; nodes 1 and 2 sent their leaves directly once it was down, and the job ended on both"

# restarted
start h4
nodes_restart 3 || t_fail "cannot restart node 3"
t_all_up 20000
nodes_sync_post release
nodes_wait_all || t_fail "h4 failed"
for i in 1 2; do
  t_until 10000 "h4 to end on node $i (its home restarted)" ended h4 "$i"
done
home_dropped() { [ "$(homes 3)" = 0 ]; }
t_until 10000 "node 3, restarted, to keep no record of h4" home_dropped
t_note "h4: its home restarted while it ran; its leaves went directly, the job ended on nodes 1 and 2, node 3 keeps no record"
t_daemons_alive
