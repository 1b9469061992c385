#!/usr/bin/env bash
# tests/multi/lookup-stall.sh - claims of unknown node ids cannot stall the
# daemon through its rendezvous lookups.
#
# With a growing set (tcp store here), a message from an address outside
# the address vector claiming a node id we have no address for makes the
# daemon look that id up in the store, at most once a second per id; a
# lookup blocks the loop for up to 300 ms when the store does not answer.
# Anyone can claim any id.  With the store stopped (SIGSTOP: connects
# succeed, answers never come), one forger claiming ids 100..119 once a
# second used to cost node 2 20 x 300 ms of blocked loop per round: node 2
# fell silent and node 1 declared it down (peer_timeout_ms 2000).  All
# lookups together now get at most 300 ms of each second.
# Checked: through 4 rounds of claims and 3 s after, node 1 and node 2
# keep their first session with each other (up, 1 session); node 2 put
# lookups off (lookups_deferred > 0) and counted every forged message in
# wire_foreign; then the store continues and a job on both runs exactly.
# The slowest shufflectl answer of node 2 meanwhile is reported, not
# checked (on a loaded machine it measures process start-up as much).
T=multi-lookup-stall
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
t_need "$WIRE_INJECT"
t_up --mode loopback -n 2 --rdv tcp --daemon-args "--heartbeat-ms 200 --peer-timeout-ms 2000"
[ -n "${SHF_NODES_STORE_PID-}" ] || t_fail "scripts/nodes --rdv tcp recorded no store pid"
t_until 20000 "nodes 1 and 2 see each other up" eval 't_peer_is 2 0 up && t_peer_is 1 1 up'
foreign0=$(nodes_stat 2 .daemon.wire_foreign)
kill -STOP "$SHF_NODES_STORE_PID"
# (the nodes' cleanup too: this trap replaces the one common.sh set)
trap 'rc=$?; kill -CONT "$SHF_NODES_STORE_PID" 2>/dev/null; (exit $rc); nodes_cleanup' EXIT
# one forger: every kind, claiming ids 100..119, a round a second
(
  for round in 1 2 3 4; do
    "$WIRE_INJECT" --me 0 --nodes 2 --bind "127.0.0.1:0" --peer "1=$SHF_NODES_ADDR_2" \
      forge 1 100-119 nojob 0 || exit 1
    sleep 1
  done
) >"$NODES_TMP/logs/forge.log" 2>&1 &
forger=$!
worst=0 asked=0 done_at=0
while :; do
  t0=$(nodes_now_ms)
  nodes_json 2 status >/dev/null || t_fail "node 2 did not answer (store stopped, forger running)"
  dt=$(( $(nodes_now_ms) - t0 ))
  asked=$((asked + 1))
  [ $dt -gt $worst ] && worst=$dt
  if [ $done_at = 0 ]; then
    kill -0 $forger 2>/dev/null || done_at=$(nodes_now_ms)
  elif [ $(( $(nodes_now_ms) - done_at )) -ge 3000 ]; then
    break
  fi
  sleep 0.2
done
wait $forger || { cat "$NODES_TMP/logs/forge.log" >&2; t_fail "the forger failed"; }
forged=0
for n in $(sed -n 's/^forged \([0-9]*\)$/\1/p' "$NODES_TMP/logs/forge.log"); do
  forged=$((forged + n))
done
[ $forged -gt 0 ] || t_fail "the forger did not say what it sent"
st1=$(nodes_peer_state 1 1) s1=$(t_peer_field 1 1 sessions)
st2=$(nodes_peer_state 2 0) s2=$(t_peer_field 2 0 sessions)
deferred=$(nodes_stat 2 .daemon.lookups_deferred)
kill -CONT "$SHF_NODES_STORE_PID"
t_note "$forged forged messages claiming ids 100-119; node 2 put $deferred lookups off and answered $asked status requests meanwhile (slowest $worst ms)"
t_note "node 1 sees node 2: $st1, $s1 session(s); node 2 sees node 1: $st2, $s2 session(s)"
[ "$st1" = up ] && [ "$s1" = 1 ] ||
  t_fail "node 1 lost node 2 while unknown ids were claimed there ($st1, $s1 sessions)"
[ "$st2" = up ] && [ "$s2" = 1 ] || t_fail "node 2 lost node 1 ($st2, $s2 sessions)"
[ "$deferred" -gt 0 ] || t_fail "node 2 put no lookup off (lookups_deferred $deferred)"
t_until 10000 "node 2 counts every forged message" \
  eval '[ "$(nodes_stat 2 .daemon.wire_foreign)" -ge $((foreign0 + forged)) ] 2>/dev/null'
foreign=$(nodes_stat 2 .daemon.wire_foreign)
t_note "node 2: wire_foreign $foreign0 -> $foreign"
[ "$foreign" = $((foreign0 + forged)) ] || t_fail "wire_foreign $foreign, expected $((foreign0 + forged))"
# the set still works
export SHF_JOB=after SHF_WORLD=4
for r in 0 1 2 3; do
  SHF_RANK=$r nodes_client $((r / 2 + 1)) "rank$r" "$TCLIENT" traffic n=500 rounds=2
done
nodes_wait_all || t_fail "a job after the claims failed"
t_note "claims of unknown ids with the store stopped: both nodes kept their session, all counted: ok"
