#!/usr/bin/env bash
# tests/multi/forge.sh - nobody outside the membership (or without the
# cluster key) gets a wire message taken (issue 15, item 1).
#
# Three nodes in a static rendezvous, loopback; node 3 is listed but no
# daemon runs there (a vacant member slot).  A real job (world 4: ranks 0
# and 1 on node 1, 2 and 3 on node 2) runs meanwhile.
#  - forgers: wire-inject in mode forge, bound to every local address the
#    nodes use (node 1's, node 2's and node 3's IP, each with an ephemeral
#    port, and 127.0.0.1), claiming to be node 1 (id 0), send node 2 one
#    message of every kind: a heartbeat opening a new session (a restart),
#    one naming a made-up tag, a batch with a record for rank 2 of the real
#    job, an ACK, a JOIN of a phantom rank, a LEAVE of all of node 1's
#    ranks, an EPOCH and a DROP.  Node 2 must take none of it: its session
#    with node 1 stays the one it had (up, 1 session), and every message is
#    counted in stats.daemon.wire_foreign, exactly.
#  - a squatter: wire-inject in mode squat at node 3's own address (the
#    vacant slot: a member's address), without the cluster key: the
#    handshake must never complete (node 2 never has a session with node 3,
#    counts auth_failed), and what it sends then (the same kinds) is taken
#    by nobody (msgs_in 0).
#  - the real job's counts are exact (tclient checks every message), and
#    node 2's rank 2 got nothing from the forgers or the squatter.
T=multi-forge
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
t_need "$WIRE_INJECT"
t_up --mode loopback -n 3 --external 3 --daemon-args "--heartbeat-ms 100"
net=$SHF_NODES_NET
export SHF_JOB=real SHF_WORLD=4
for r in 0 1 2 3; do
  SHF_RANK=$r nodes_client $((r / 2 + 1)) "rank$r" "$TCLIENT" traffic n=2000 rounds=4 hold=release
done
t_until 20000 "node 2 sees node 1 up" t_peer_is 2 0 up
s0=$(t_peer_field 2 0 sessions)
[ "$s0" = 1 ] || t_fail "node 2: $s0 sessions with node 1 before the forgers"
foreign0=$(nodes_stat 2 .daemon.wire_foreign)
forged=0 i=0
for b in "$net.1:0" "$net.2:0" "$net.3:0" "127.0.0.1:0"; do
  i=$((i + 1))
  "$WIRE_INJECT" --me 2 --nodes 3 --bind "$b" --peer "1=$SHF_NODES_ADDR_2" \
    forge 1 0 real 2 >"$NODES_TMP/logs/forge$i.log" 2>&1 ||
    { cat "$NODES_TMP/logs/forge$i.log" >&2; t_fail "forger at $b failed"; }
  n=$(sed -n 's/^forged \([0-9]*\)$/\1/p' "$NODES_TMP/logs/forge$i.log")
  [ -n "$n" ] || t_fail "forger at $b did not say what it sent"
  forged=$((forged + n))
  t_note "forger at $b (claims node id 0): $n messages"
done
# every forged message counted, exactly (before the squatter, whose first
# messages may arrive before its connection is matched to its address:
# those count as foreign too)
t_until 10000 "node 2 counts the forged messages" \
  eval '[ "$(nodes_stat 2 .daemon.wire_foreign)" -ge $((foreign0 + forged)) ] 2>/dev/null'
sleep 0.3
foreign=$(nodes_stat 2 .daemon.wire_foreign)
t_note "node 2: wire_foreign $foreign0 -> $foreign after $forged forged messages"
[ "$foreign" = $((foreign0 + forged)) ] ||
  t_fail "wire_foreign $foreign, expected $((foreign0 + forged))"
"$WIRE_INJECT" --me 2 --nodes 3 --bind "$SHF_NODES_ADDR_3" --peer "1=$SHF_NODES_ADDR_2" \
  --hs-ms 3000 squat 1 real 2 >"$NODES_TMP/logs/squat.log" 2>&1 &
sq=$!
NODES_SYNC_TIMEOUT_MS=20000 nodes_sync_wait squat-sent ||
  { cat "$NODES_TMP/logs/squat.log" >&2; t_fail "the squatter failed"; }
sleep 0.5
# behaviour first: what the forgers and the squatter could do
st=$(nodes_peer_state 2 0) s1=$(t_peer_field 2 0 sessions)
t_note "node 2's peer node 1: $st, $s1 sessions"
[ "$st" = up ] && [ "$s1" = 1 ] || t_fail "node 2's session with node 1 was ended by forged messages ($st, $s1 sessions)"
sq_sessions=$(t_peer_field 2 2 sessions) sq_in=$(t_peer_field 2 2 msgs_in)
[ "${sq_sessions:-0}" = 0 ] && [ "${sq_in:-0}" = 0 ] ||
  t_fail "node 2 took the squatter: sessions $sq_sessions, msgs_in $sq_in"
t_release_held 0 1 2 3
nodes_wait_all || t_fail "the real job failed (a forged message reached it?)"
authf=$(nodes_stat 2 .daemon.auth_failed)
t_note "node 2: auth_failed $authf after the squatter"
[ "$authf" -ge 1 ] 2>/dev/null || t_fail "auth_failed $authf: the squatter was not counted"
nodes_sync_post inject-exit
wait $sq || { cat "$NODES_TMP/logs/squat.log" >&2; t_fail "the squatter failed"; }
t_daemons_alive
t_note "non-members and key-less squatters: nothing taken, all counted: ok"
