#!/usr/bin/env bash
# tests/multi/hb-replay.sh - captured heartbeats do not keep a dead node up
# (issue 24, item 6).
#
# Three nodes in a static rendezvous, loopback, a cluster key; node 3 is
# played by wire-inject (mode replay) with the key: it does the handshake
# with node 1 and heartbeats it for 1.5 s, then "dies", and from its own
# address (a dead node's vacant address) only the heartbeats it sent are
# sent again, in a loop, for 6 s.  With peer_timeout_ms 2000, node 1 must
# see node 3 not up within 2000 ms plus a margin of 1500 ms after the
# replay starts, count the refused heartbeats (stats hb_refused), and its
# session with node 2 must be untouched.
T=multi-hb-replay
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$WIRE_INJECT"
t_up --mode loopback -n 3 --external 3 --daemon-args "--peer-timeout-ms 2000 --heartbeat-ms 200"
[ -n "${SHF_NODES_KEY-}" ] || t_skip "scripts/nodes gave no cluster key"
t_until 20000 "nodes 1 and 2 up" t_peer_is 1 1 up
"$WIRE_INJECT" --me 2 --nodes 3 --bind "$SHF_NODES_ADDR_3" --peer "0=$SHF_NODES_ADDR_1" \
  --key "$SHF_NODES_KEY" --hb-ms 100 replay 0 6000 >"$NODES_TMP/logs/replay.log" 2>&1 &
rp=$!
NODES_SYNC_TIMEOUT_MS=15000 nodes_sync_wait replay-start ||
  { cat "$NODES_TMP/logs/replay.log" >&2; t_fail "the replayer never started replaying"; }
t0=$(nodes_now_ms)
grep -q "^session yes" "$NODES_TMP/logs/replay.log" || t_fail "node 3 (wire-inject) never had a session with node 1"
st=$(nodes_peer_state 1 2)
t_note "replay started; node 1 sees node 3 '$st'; $(grep '^recorded' "$NODES_TMP/logs/replay.log")"
down_at=""
while [ $(( $(nodes_now_ms) - t0 )) -lt 5500 ]; do
  st=$(nodes_peer_state 1 2)
  if [ "$st" != up ]; then down_at=$(( $(nodes_now_ms) - t0 )); break; fi
  sleep 0.1
done
[ -n "$down_at" ] || t_fail "node 1 still sees node 3 up 5500 ms into the replay of its heartbeats (peer_timeout_ms 2000)"
t_note "node 1 sees node 3 '$st' $down_at ms after the replay started"
[ "$down_at" -le 3500 ] || t_fail "node 3 went down only after $down_at ms of replay (peer timeout 2000 ms + 1500 ms margin)"
wait "$rp" || { cat "$NODES_TMP/logs/replay.log" >&2; t_fail "the replayer failed"; }
ref=$(nodes_stat 1 .daemon.hb_refused)
t_note "node 1: hb_refused $ref; $(grep '^replayed' "$NODES_TMP/logs/replay.log")"
[ "$ref" -ge 1 ] 2>/dev/null || t_fail "node 1 counted no refused heartbeat (hb_refused $ref)"
[ "$(nodes_peer_state 1 1)" = up ] && [ "$(t_peer_field 1 1 sessions)" = 1 ] ||
  t_fail "node 1's session with node 2 was disturbed"
t_daemons_alive
