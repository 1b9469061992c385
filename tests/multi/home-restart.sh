#!/usr/bin/env bash
# tests/multi/home-restart.sh - a job's home restarts or is lost before the
# job's world is complete (docs/protocol-wire.md, "Job start": "When the set
# changes").
#
# 3 loopback nodes.  Jobs of world 2: rank 0 on node 1, rank 1 on node 2;
# the rendezvous hash (daemon/jobhome.c) makes node 3 the home of both job
# names used here (hy, h4), so node 3 holds what node 1 announced.
#   - restart: rank 0 of hy waits on node 1, node 3 holds its join
#     (home_jobs 1); node 3's daemon is killed (-9) and started again with
#     nothing; node 1 announces rank 0 again to the new session (home_jobs
#     1 again on node 3); then rank 1 starts on node 2: the job is exact.
#   - late: while job hz (ranks on nodes 1 and 2, home node 2) runs, rank 1
#     of hz registers on node 3, which does not know the job: its home
#     refuses it with -EEXIST (JOB_DENY), the running job is not touched
#     and ends exact (wire version 5 refused it on node 3 itself, from the
#     joins every node got);
#   - lost: rank 0 of h4 waits on node 1 with node 3 holding its join;
#     node 3 is killed for good; once nodes 1 and 2 see it down, rank 1
#     starts on node 2: the home is picked again among nodes 1 and 2, node
#     1 announces again, and the job is exact.
T=multi-home-restart
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
t_up --mode loopback -n 3 --daemon-args "--peer-timeout-ms 1000 --heartbeat-ms 200"
homes() { nodes_stat "$1" '.daemon.home_jobs' 2>/dev/null || echo x; }
home3_holds() { [ "$(homes 3)" = 1 ]; }
rank() { # JOB RANK NODE
  SHF_JOB=$1 SHF_WORLD=2 SHF_RANK=$2 nodes_client "$3" "$1.$2" "$TCLIENT" traffic n=200 rounds=2 \
    seed=7 timeout=30000
}
t_all_up 20000

# late: a registration on a node outside a running job
rm -f "$NODES_SYNC"/held.* "$NODES_SYNC"/release
for r in 0 1; do
  SHF_JOB=hz SHF_WORLD=2 SHF_RANK=$r nodes_client $((r + 1)) "hz.$r" "$TCLIENT" traffic n=200 \
    rounds=2 seed=7 hold=release timeout=30000
done
nodes_sync_wait held.0 held.1 || { nodes_sync_post release; t_fail "hz: the job did not run"; }
SHF_JOB=hz SHF_WORLD=2 SHF_RANK=1 nodes_client 3 hz.late "$TCLIENT" open expect=EEXIST timeout=10000
late_done() { grep -q 'tclient open' "$NODES_TMP/logs/hz.late.log" 2>/dev/null; }
t_until 15000 "the late registration on node 3 to be answered" late_done
nodes_sync_post release
nodes_wait_all || t_fail "hz: the late registration was not refused with EEXIST, or the job failed"
grep -q 'already runs on node' "$NODES_TMP/logs/hz.late.log" ||
  t_fail "hz: the refusal does not say the job runs elsewhere: $(cat "$NODES_TMP/logs/hz.late.log")"
t_note "hz: a late registration on node 3 refused with EEXIST by the job's home; the job ran exact"

rank hy 0 1
t_until 10000 "node 3 (the home of hy) to hold node 1's join" home3_holds
nodes_restart 3 || t_fail "cannot restart node 3"
t_note "hy: node 3, its home, restarted while rank 0 waited on node 1"
t_until 20000 "node 3, restarted, to hold node 1's join again" home3_holds
rank hy 1 2
nodes_wait_all || t_fail "hy: the job failed after its home restarted"
t_note "hy: node 1 announced again to its restarted home; the job is exact"

rank h4 0 1
t_until 10000 "node 3 (the home of h4) to hold node 1's join" home3_holds
nodes kill --node 3 --signal KILL || t_fail "cannot kill node 3's daemon"
T_KILLED=3
down_both() { t_peer_went_down 1 2 && t_peer_went_down 2 2; }
t_until 20000 "nodes 1 and 2 to see node id 2 down" down_both
rank h4 1 2
nodes_wait_all || t_fail "h4: the job failed after its home was lost"
h1=$(homes 1) h2=$(homes 2)
t_note "h4: node 3, its home, lost; the home picked again (home_jobs now: node 1 $h1, node 2 $h2); the job is exact"
