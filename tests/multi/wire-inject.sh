#!/usr/bin/env bash
# tests/multi/wire-inject.sh - malformed wire messages.
#
# Three nodes in a static rendezvous; node 3 is not a daemon but
# wire-inject, which sends node 1 a set of malformed messages (noise, bad
# magic, version, kind, lengths, addressing, a forged source, truncated and
# inconsistent batches, a duplicate, an ACK for nothing, ...), each of which
# must raise node 1's stats.daemon.wire_bad by exactly one; then one
# message larger than any receive buffer.  Meanwhile and afterwards real
# traffic between nodes 1 and 2 must complete, and node 1 must live on.
#
# Sessions (wire v2): the injector first does the session handshake with
# nodes 1 and 2 and stamps what it sends with (its tag, the daemon's tag),
# so the well-formed-but-wrong messages (a bad record, an ACK for nothing,
# a duplicate batch) still reach the checks that count wire_bad: the
# expected wire_bad is unchanged (the injector says how many, 18).  One
# more message is well-formed but of a session node 1 never had (a made-up
# dst_session): it must raise stats.daemon.wire_stale by exactly one and
# not wire_bad.  Nothing else in this run may be stale: every daemon and
# the injector only ever send in their current sessions.
T=multi-wire-inject
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
t_need "$WIRE_INJECT"
t_up --mode loopback -n 3 --external 3 --daemon-args "--heartbeat-ms 100"
"$WIRE_INJECT" --me 2 --nodes 3 --bind "$SHF_NODES_ADDR_3" --key "$SHF_NODES_KEY" --peer "0=$SHF_NODES_ADDR_1" \
  --peer "1=$SHF_NODES_ADDR_2" garbage 0 >"$NODES_TMP/logs/inject.log" 2>&1 &
inj=$!
export SHF_JOB=real SHF_WORLD=4
for r in 0 1 2 3; do
  SHF_RANK=$r nodes_client $((r / 2 + 1)) "rank$r" "$TCLIENT" traffic n=3000 rounds=6 hold=release
done
NODES_SYNC_TIMEOUT_MS=20000 nodes_sync_wait inject-sent || { cat "$NODES_TMP/logs/inject.log" >&2; t_fail "injector failed"; }
want=$(sed -n 's/^sent \([0-9]*\) counted$/\1/p' "$NODES_TMP/logs/inject.log")
[ -n "$want" ] || t_fail "the injector did not say what it sent"
want_stale=$(sed -n 's/^sent \([0-9]*\) stale$/\1/p' "$NODES_TMP/logs/inject.log")
[ "$want_stale" = 1 ] || t_fail "the injector did not send its one stale message"
[ "$(nodes_peer_state 1 2)" = up ] || t_fail "node 1 does not see the injector as up"
end=$(( $(nodes_now_ms) + 10000 ))
while bad=$(nodes_stat 1 .daemon.wire_bad); [ "$bad" -lt "$want" ]; do
  [ "$(nodes_now_ms)" -lt "$end" ] || t_fail "wire_bad $bad of the $want malformed messages"
  sleep 0.05
done
sleep 0.5
while stale=$(nodes_stat 1 .daemon.wire_stale); [ "$stale" -lt "$want_stale" ]; do
  [ "$(nodes_now_ms)" -lt "$end" ] || t_fail "wire_stale $stale of the $want_stale stale messages"
  sleep 0.05
done
sleep 0.5
bad=$(nodes_stat 1 .daemon.wire_bad)
stale=$(nodes_stat 1 .daemon.wire_stale)
t_note "node 1: wire_bad $bad after $want malformed messages, wire_stale $stale after $want_stale"
[ "$bad" = "$want" ] || t_fail "wire_bad $bad, expected exactly $want"
wire_version=$(sed -n 's/^#define SHF_WIRE_VERSION \([0-9]*\)u.*/\1/p' "$SHF_TEST_SOURCE_DIR/proto/wire.h")
grep -q "of wire version $((wire_version - 1)) from node -\?[0-9]*: this daemon speaks wire version $wire_version" \
  "$SHF_NODES_LOG_1" || t_fail "node 1's log does not name both wire versions (the last release's and its own)"
[ "$stale" = "$want_stale" ] || t_fail "wire_stale $stale, expected exactly $want_stale"
nodes_sync_post oversize
NODES_SYNC_TIMEOUT_MS=10000 nodes_sync_wait oversize-sent ||
  { cat "$NODES_TMP/logs/inject.log" >&2; t_fail "the injector did not send the oversized message"; }
sleep 0.5
t_daemons_alive
t_note "node 1 after an oversized message: wire_bad $(nodes_stat 1 .daemon.wire_bad), alive"
t_release_held 0 1 2 3
nodes_wait_all || t_fail "real traffic between nodes 1 and 2 failed"
# and once more, after everything
export SHF_JOB=real2
for r in 0 1 2 3; do
  SHF_RANK=$r nodes_client $((r / 2 + 1)) "again$r" "$TCLIENT" traffic n=1000 rounds=2 hold=again
done
for r in 0 1 2 3; do nodes_sync_wait "held.$r" || t_fail "second job: rank $r"; done
nodes_sync_post again
nodes_wait_all || t_fail "traffic after the injection failed"
nodes_sync_post inject-exit
wait $inj || { cat "$NODES_TMP/logs/inject.log" >&2; t_fail "the injector failed"; }
b2=$(nodes_stat 2 .daemon.wire_bad)
[ "$b2" = 0 ] || t_fail "node 2 counted $b2 bad messages (it was sent none)"
s1=$(nodes_stat 1 .daemon.wire_stale) s2=$(nodes_stat 2 .daemon.wire_stale)
[ "$s1" = "$want_stale" ] && [ "$s2" = 0 ] ||
  t_fail "wire_stale: node 1 $s1 (want $want_stale), node 2 $s2 (want 0)"
t_daemons_alive
t_note "malformed messages counted and dropped; real traffic unaffected: ok"
