#!/usr/bin/env bash
# tests/multi/epoch-abort.sh N - a rank dies inside an epoch's drain while
# every other rank waits in phase 2: nobody may hang (daemon/epoch.c,
# EPOCH_ABORT).
#
# N loopback nodes x 1 rank (mn-client epochabort).  Rank 1 (node id 1, an
# interior node of the job's epoch tree: its parent is node id 0, its
# children node ids 3 and 4) blocks for good in its delivery callback on a
# message from rank 0, so it stays in its epoch's drain (phase 1 done,
# phase 2 never sent), while the others enter phase 2.  Every node other
# than node id 1 is then in phase 2, where another node's leave alone does
# not fail the epoch (the rank may have gone through it).  The driver kills
# rank 1's process (SIGKILL); node id 1 sees its rank leave with the epoch
# pending and sends EPOCH_ABORT over the tree: every other rank's epoch
# must return -ESRCH well within its timeout (20 s; the time is printed),
# naming rank 1 alone as the culprit (the ranks that exit after their
# epochs failed are not).
# Each daemon counted the abort (epoch_msgs_in) and stays alive.
T="multi-epoch-abort-$1"
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
N=$1 V=1
t_up -n "$N" --daemon-args "--peer-timeout-ms 3000 --heartbeat-ms 250"
export SHF_JOB=eabort SHF_WORLD=$N
for r in $(seq 0 $((N - 1))); do
  if [ "$r" = $V ]; then  # not a nodes_client: it is meant to die (137)
    SHF_RANK=$r "$NODES_SCRIPT" run --dir "$NODES_DIR" --node $((r + 1)) -- "$MNCLIENT" epochabort \
      victim=$V timeout=20000 >"$NODES_TMP/logs/victim.log" 2>&1 &
    vjob=$!
    continue
  fi
  SHF_RANK=$r nodes_client $((r + 1)) "rank$r" "$MNCLIENT" epochabort victim=$V expect=ESRCH timeout=20000
done
waits=("stuck.$V")
for r in $(seq 0 $((N - 1))); do [ "$r" = $V ] || waits+=("in-epoch.$r"); done
nodes_sync_wait "${waits[@]}" || t_fail "the ranks did not get into position"
# every other rank in phase 2: each other node counts its own rank there
in_p2() {
  local i
  for i in $(seq 1 "$N"); do
    [ "$i" = $((V + 1)) ] && continue
    [ "$(nodes_json "$i" jobs | jq '[.jobs[] | select(.name == "eabort") | .epoch_phase2] | first // 0')" -ge 1 ] || return 1
  done
}
t_until 20000 "every other node to count its rank in phase 2" in_p2
pid=$(nodes_json $((V + 1)) clients | jq -r ".clients[] | select(.rank == $V) | .pid")
[ -n "$pid" ] && [ "$pid" != null ] || t_fail "no pid for rank $V on node $((V + 1))"
t_kill=$(nodes_now_ms)
kill -KILL "$pid" || t_fail "cannot kill rank $V (pid $pid)"
t_note "rank $V (pid $pid) killed inside its epoch's drain"
nodes_wait_all || t_fail "a rank's epoch did not return ESRCH (above)"
wait "$vjob"; rc=$?
[ "$rc" = 137 ] || t_fail "the victim exited $rc, not killed (137): $(cat "$NODES_TMP/logs/victim.log")"
t_note "every other rank's epoch returned within $(( $(nodes_now_ms) - t_kill )) ms of the kill"
grep -h "epoch with rank" "$NODES_TMP"/logs/rank*.log
# one cause, one culprit: every rank names rank V, not also the ranks that
# exited after their own epochs failed (their leaves say so)
for f in "$NODES_TMP"/logs/rank*.log; do
  line=$(grep -h "epoch with rank" "$f")
  [[ "$line" == *": rank $V of job eabort left the job"* ]] ||
    t_fail "not rank $V alone named as the culprit: $line"
done
t_daemons_alive
if t_sanitizer_reports; then t_fail "a daemon reported memory misuse (above)"; fi
t_note "ok"
