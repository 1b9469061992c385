#!/usr/bin/env bash
# tests/multi/lazy-wake-race.sh - the wake race of lazy peers (issue 14
# item 6, docs/protocol-wire.md "Idle peers"): a wake sent just as the
# other end releases the pair's connection must not be lost.
#
# 2 loopback nodes running shuffled-fault, peer_idle_ms 400, heartbeat_ms
# 200.  SHD_FAULT_RELEASE (tests/multi/fault-inject.c) makes the race
# certain instead of rare:
#  - node 1 (daemon id 0) holds its first release of node id 1's
#    connection, its loop blocked, until the test says go: whatever node 2
#    sends meanwhile is on the connection, unread, when it closes;
#  - node 2 (id 1) never releases its end (refuse=0), as when its own
#    release tick has not come yet.
# While node 1 holds the release, rank 0 of job w (world 2) registers on
# node 2: node 2 wakes node 1 (peers_woken) and announces the rank
# (JOB_JOIN).  Once node 2's sends have all completed, the release goes
# on.  Then rank 1 registers on node 1 and the job (tclient traffic:
# exact counts, order, epochs) must complete.
# Unfixed, the JOB_JOIN is dropped with the connection: node 1 never learns
# rank 0, and rank 1 waits for its world until its timeout.  Fixed, node 2
# holds the JOB_JOIN (sending only HB_WAKE heartbeats) until node 1
# answers: the job is exact, node 2 counted a wake and a held message, and
# nothing was dropped (wake_dropped 0).
T=multi-lazy-wake-race
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
SHUFFLED_FAULT=${SHF_TEST_SHUFFLED_FAULT:-$NODES_BUILD/tests/multi/shuffled-fault}
t_need "$SHUFFLED_FAULT"
mark=$NODES_SYNC/release-held go=$NODES_SYNC/release-go
export SHF_SHUFFLED=$SHUFFLED_FAULT
export SHD_FAULT_RELEASE="node=1,mark=$mark,go=$go,wait_ms=30000,refuse=0"
hb_ms=200
t_up --mode loopback -n 2 --daemon-args "--peer-idle-ms 400 --heartbeat-ms $hb_ms --peer-timeout-ms 3000"

t_until 30000 "node 1 holds its release of node id 1's connection" test -e "$mark"
grep -h '^fault injection: the release' "$(t_daemon_out 1)" ||
  t_fail "node 1's daemon never held the release (is $SHF_SHUFFLED shuffled-fault?)"
# only node 2 answers now (node 1's loop is blocked)
st=$(nodes_json 2 peers | jq -c '.peers[] | select(.node == 0) | {state, quiet}')
t_note "node 2's view of node 1 while node 1 holds its release: $st"
w0=$(nodes_stat 2 .daemon.peers_woken)

export SHF_JOB=w SHF_WORLD=2
SHF_RANK=0 nodes_client 2 rank0 "$TCLIENT" traffic n=200 rounds=2 minlen=48 maxlen=400 \
  seed=5 timeout=15000
woke() { [ "$(nodes_stat 2 .daemon.peers_woken)" -gt "$w0" ]; }
t_until 15000 "node 2 wakes node 1 (rank 0 registered)" woke
sent() { # every send node 2 made has completed: its bytes are on the wire
  local s
  s=$(nodes_json 2 stats | jq -r '.fabric | "\(.sends) \(.sends_done + .send_errors)"')
  [ "${s% *}" = "${s#* }" ]
}
t_until 10000 "node 2's sends completed" sent
t_note "node 2 after its wake, before the release: $(nodes_json 2 stats | jq -c '.daemon | {peers_woken, wakes, wake_held, wake_dropped}'); its peer node 1: $(nodes_json 2 peers | jq -c '.peers[] | select(.node == 0) | {state, quiet, waking, held}')"
nodes_sync_post release-go
t_until 10000 "node 1 releases the connection" grep -q '^fault injection: releasing' "$(t_daemon_out 1)"
grep -h '^fault injection: releasing' "$(t_daemon_out 1)"

SHF_RANK=1 nodes_client 1 rank1 "$TCLIENT" traffic n=200 rounds=2 minlen=48 maxlen=400 \
  seed=5 timeout=15000
if ! nodes_wait_all; then
  for i in 1 2; do
    echo "--- node $i: $(nodes_json "$i" stats | jq -c '.daemon | {peers_woken, conns_released, wakes, wake_held, wake_dropped, wire_bad}')" >&2
    echo "--- node $i: $(nodes_json "$i" jobs 2>/dev/null | jq -c . | cut -c1-400)" >&2
  done
  t_fail "job w failed after a wake raced the release (a lost JOB_JOIN: logs above)"
fi
t_note "job w on nodes 2 then 1: exact"
held=$(nodes_stat 2 .daemon.wake_held)
dropped=$(nodes_stat 2 .daemon.wake_dropped)
wakes=$(nodes_stat 2 .daemon.wakes)
[ "${wakes:-0}" -ge 1 ] || t_fail "node 2 counted no wake (wakes $wakes)"
[ "${held:-0}" -ge 1 ] || t_fail "node 2 held nothing during its wake (wake_held $held)"
[ "$dropped" = 0 ] || t_fail "node 2 dropped $dropped held messages"
rel=$(nodes_stat 1 .daemon.conns_released)
[ "${rel:-0}" -ge 1 ] || t_fail "node 1 counted no released connection ($rel)"
t_note "node 2: wakes $wakes, wake_held $held, wake_dropped $dropped; node 1: conns_released $rel"
t_fault_check_clean
t_note "ok"
