#!/usr/bin/env bash
# tests/multi/fault-leave-free.sh - the job is freed under shd_job_leave()
# (review-turn2 §5.1 c).
#
# 2 nodes running shuffled-fault, world 2: rank 0 on node 1 (daemon id 0),
# rank 1 on node 2 (id 1).  Phase A: messages both ways, flush, epoch,
# exact counts.  Armed (SHD_FAULT_SEND node=1,kind=job-leave), rank 0
# closes: node 1's shd_job_leave() announces the leave to node 2
# (shd_net_job_rank), that send fails synchronously, peer_down(node 2)
# marks rank 1 lost and, the job having no rank left, job_free() frees it
# while shd_job_leave() still uses it (reads j after, bumps j->drainers,
# and the drained client's later leave frees it again).  At 994cc2f ASan
# stops one step earlier, at the same send: post() reads m->peer after
# on_send_done() freed the message (§5.1 a; with post() fixed, the report
# is the freed job, job.c shd_job_leave).  The plain build runs into the
# freed job and double-frees it (glibc abort) or corrupts the job list.
# Checked: no daemon dies or reports memory misuse; node 1 shows node 2
# down and lets rank 0 go; rank 1 closes cleanly; node 2 sees node 1 go
# down and both end with no client and no job, each life of the job on
# node 1 ended exactly once; the fault fired.
T=multi-fault-leave-free
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$MNCLIENT"
fault=$NODES_SYNC/fault
t_fault_setup "node=1,kind=job-leave,file=$fault"
t_up --mode loopback -n 2 --daemon-args "--peer-timeout-ms 2000 --heartbeat-ms 200"

export SHF_JOB=leavefree SHF_WORLD=2
SHF_RANK=0 nodes_client 1 rank0 "$MNCLIENT" leavefree m=200 timeout=60000
SHF_RANK=1 nodes_client 2 rank1 "$MNCLIENT" leavefree m=200 timeout=60000
nodes_sync_wait E.0 E.1 || t_fault_fail "phase A did not complete"
: > "$fault"
nodes_sync_post armed
nodes_sync_wait closed.0 || t_fault_fail "rank 0 did not close"
t_until 20000 "node 1 to take node 2 down" t_peer_went_down 1 1
t_fault_fired 1
# Node 1 ends the job once node 2 is down and rank 0 has drained; but
# node 1 probes node 2 and comes back as a new session, and node 2 then
# replays rank 1's join: if that lands after the end, node 1 knows the job
# again for the still-live rank 1 until rank 1 leaves.  So: no client on
# node 1 now, and no job on either node once rank 1 has left.
t_until 30000 "node 1 to let rank 0 go" t_no_clients 1
nodes_sync_post exit.1
# node 2 sees node 1 go down (node 1's new session, or a timeout if node 1
# stays away): rank 0 is lost there too and the job ends with no rank left
# (at 994cc2f peer_down() freed it while walking the jobs)
node2_done() { t_peer_went_down 2 0 && t_idle 2; }
t_until 30000 "node 2 to see node 1 go down and end the job" node2_done
t_until 10000 "node 1 to end the job once rank 1 has left" t_idle 1
ok=1
nodes_wait_all || ok=0
cat "$NODES_TMP"/logs/rank*.log
t_fault_check_clean
[ $ok = 1 ] || t_fail "a rank failed"
# each life of the job on node 1 ends exactly once (a double free would
# end one twice)
ended=$(grep -c "job $SHF_JOB ended" "$(nodes_var LOG 1)")
created=$(grep -c "job $SHF_JOB created" "$(nodes_var LOG 1)")
t_note "node 1 logged job $SHF_JOB created $created time(s), ended $ended time(s)"
[ "$ended" = "$created" ] || t_fail "node 1 created job $SHF_JOB $created times but ended it $ended times"
t_note "job leave with a synchronous send failure: ok"
