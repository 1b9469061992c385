#!/usr/bin/env bash
# tests/multi/route2d-kill.sh - routing=2d: an intermediate node is lost
# (issue 14 item 5).  9 nodes on a 3 x 3 grid (daemon ids 0-8, row-major).
# Rank 0 of job "parkdrop" lives on daemon id 3 (row 1, column 0), rank 1
# on id 1 (row 0, column 1): id 3 reaches id 1 through id 4 (row 1, column
# 1), the centre.  Rank 1 stops reading; rank 0 sends more than rank 1's
# 16 KiB ring holds, so id 1 parks id 3's batches, and blocks in
# shf_flush(REMOTE).  Then id 4's daemon is killed (SIGKILL).  Checked:
#  - no hang: id 3 and id 1 each take the other down (the session went
#    through the intermediate) within 3 x peer_timeout_ms + 1 s, like the
#    loss of the destination itself;
#  - rank 0's flush returns -EHOSTDOWN with 1 <= dropped_down <= count (the
#    records held are reported as possible loss; mn-client parkdrop);
#  - id 1 counts the parked records it dropped (rx_drops_down > 0);
#  - reroute: id 3 and id 1 meet again in a new session through the other
#    intermediate (id 0), and a new job between them runs exactly (tclient:
#    counts, order, epochs);
#  - no other pair was disturbed: id 0 and id 8 still have their first
#    session with each other (they route through id 2 and id 6).
T=multi-route2d-kill
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
t_need "$TCLIENT"
N=9 S=4 R=2 V=5           # harness numbering: sender node 4 (id 3), receiver 2 (id 1), victim 5 (id 4)
timeout_ms=1000
bound_ms=$((3 * timeout_ms + 1000))
t_up --mode loopback -n $N --daemon-args "--routing 2d --max-msg 4K --peer-timeout-ms $timeout_ms --heartbeat-ms 200"

export SHF_JOB=parkdrop SHF_WORLD=2
SHF_RANK=0 nodes_client $S rank0 "$MNCLIENT" parkdrop m=200 count=200 size=1000 timeout=60000
SHF_RANK=1 nodes_client $R rank1 "$MNCLIENT" parkdrop m=200 vring=16384 timeout=60000
nodes_sync_wait A.0 A.1 stopped.1 sent.0 || t_fail "the ranks did not get into position"
route=$(t_peer_field $S 1 route)
[ "$route" = "via 4" ] || t_fail "id 3 reaches id 1 '$route', expected 'via 4'"
parked() { [ "$(t_peer_field $R 3 parked)" = true ]; }
t_until 30000 "id 1 to park id 3's batches on rank 1's full ring" parked
s08=$(t_peer_field 1 8 sessions)

t_kill=$(nodes_now_ms)
T_KILLED=$V
nodes kill --node $V --signal KILL || t_fail "cannot kill node $V's daemon"
t_note "id 4 (the intermediate) killed"
t_until $bound_ms "id 3 to take id 1 down" t_peer_went_down $S 1
t_note "id 3 took id 1 down $(( $(nodes_now_ms) - t_kill )) ms after the kill"
t_until $bound_ms "id 1 to take id 3 down" t_peer_went_down $R 3
t_note "id 1 took id 3 down $(( $(nodes_now_ms) - t_kill )) ms after the kill"
nodes_sync_post armed
nodes_sync_wait flushed.0 || t_fail "rank 0's flush did not return -EHOSTDOWN as expected"
nodes_sync_post exit.1 end
ok=1
nodes_wait_all || ok=0
cat "$NODES_TMP"/logs/rank*.log
[ $ok = 1 ] || t_fail "a rank failed"
rxd=$(nodes_stat $R .daemon.rx_drops_down)
[ "$rxd" -gt 0 ] || t_fail "id 1 dropped id 3's parked records without counting them (rx_drops_down $rxd)"
t_note "id 1: rx_drops_down $rxd (parked records of the lost session, counted)"

# reroute: a new session through id 0
t_until 15000 "id 3 and id 1 up again" eval 't_peer_is $S 1 up && t_peer_is $R 3 up'
route=$(t_peer_field $S 1 route) ss=$(t_peer_field $S 1 sessions)
t_note "id 3 reaches id 1 '$route' (session $ss)"
[ "$route" = "via 0" ] || t_fail "id 3 reaches id 1 '$route' after the loss of id 4, expected 'via 0'"
export SHF_JOB=after SHF_WORLD=2
SHF_RANK=0 nodes_client $S after0 "$TCLIENT" traffic n=800 rounds=2 hold=release
SHF_RANK=1 nodes_client $R after1 "$TCLIENT" traffic n=800 rounds=2 hold=release
t_release_held 0 1
nodes_wait_all || t_fail "a new job between id 3 and id 1 failed"
[ "$(t_peer_field 1 8 sessions)" = "$s08" ] && t_peer_is 1 8 up ||
  t_fail "id 0 and id 8 (not through id 4) lost their session"
for i in $(seq 1 $N); do
  [ $i = $V ] && continue
  "$SHF_NODES_SHUFFLECTL" -s "$(nodes_var SOCKET "$i")" ping >/dev/null || t_fail "node $i died"
done
t_note "intermediate lost: reported like the destination's loss, rerouted, new job exact: ok"
