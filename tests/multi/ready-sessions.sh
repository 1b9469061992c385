#!/usr/bin/env bash
# tests/multi/ready-sessions.sh - a job goes READY on a node only once that
# node's sessions with the job's other nodes are up (daemon/job.c,
# shd_job_check_ready).  The home confirms a world over its own sessions;
# with routing=2d a node's session with a node outside its row and column
# comes up later, over forwarded heartbeats, and until then its records to
# that node drop as "node down" (multi-mr-route2d-a2a failed so once).
# wire-inject plays node 0, the job's home; node 2 is listed but nobody
# plays it, so node 1 never has a session with it.
#   job "nosess": rank 0 on node 1, rank 1 on node 2 (no session): rank 0
#     must not be READY; its shf_open times out naming node 2.  Before the
#     fix it opened at once.
#   job "sess": rank 1 on node 0 (up): rank 0 opens.
T=multi-ready-sessions
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$WIRE_INJECT"
t_need "$TCLIENT"
t_up --mode loopback -n 3 --external 1,3
"$WIRE_INJECT" --me 0 --nodes 3 --bind "$SHF_NODES_ADDR_1" --key "$SHF_NODES_KEY" \
  --peer "1=$SHF_NODES_ADDR_2" mapto 1 2 nosess 0 sess \
  >"$NODES_TMP/logs/inject.log" 2>&1 &
inject=$!

# map.JOB once node 1 knows the job (its rank 0 waits for its world)
has_job() { [ "$(nodes_json 2 jobs | jq --arg j "$1" '[.jobs[] | select(.name == $j)] | length')" -ge 1 ]; }
map_when_waiting() {
  local j=$1 end=$(($(nodes_now_ms) + 10000))
  until has_job "$j"; do
    [ "$(nodes_now_ms)" -lt $end ] || t_fail "node 1 never showed job $j"
    sleep 0.05
  done
  nodes_sync_post "map.$j"
  nodes_sync_wait "mapped.$j" || t_fail "wire-inject never sent the map of $j"
}

SHF_JOB=nosess SHF_WORLD=2 SHF_RANK=0 nodes_client 2 nosess "$TCLIENT" open expect=ETIMEDOUT \
  detail="no session yet with node 2" timeout=2500
map_when_waiting nosess
nodes_wait_all || t_fail "rank 0 of nosess went READY with no session to node 2 (its log above)"
t_note "a confirmed world whose node 2 has no session with node 1: -ETIMEDOUT naming node 2"

SHF_JOB=sess SHF_WORLD=2 SHF_RANK=0 nodes_client 2 sess "$TCLIENT" open timeout=10000
map_when_waiting sess
nodes_wait_all || t_fail "rank 0 of sess did not open (its log above)"
t_note "the same with rank 1 on an up node: READY"

nodes_sync_post inject-exit
wait "$inject" || { cat "$NODES_TMP/logs/inject.log" >&2; t_fail "wire-inject failed"; }
cat "$NODES_TMP/logs/inject.log"
t_daemons_alive
if t_sanitizer_reports; then t_fail "a daemon reported memory misuse (above)"; fi
t_note "ok"
