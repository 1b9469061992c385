#!/usr/bin/env bash
# tests/multi/lost-job.sh - a node is lost with every rank of a job on it
# (issue 15, item 2).
#
# 3 loopback nodes.  Six jobs (world 2 each) have all their ranks on node
# 2 (daemon node id 1); nodes 1 and 3 know of them only as their home
# (node 2's JOB_JOINs went to each job's home: `home_jobs`; wire version
# 6).  Node 2's daemon is killed with SIGKILL.  Each survivor then loses
# every rank of those jobs at once: at 994cc2f peer_down() walked the jobs
# and shd_job_remote_rank() freed a job that lived only on the lost node
# while the walk still used it (ASan: heap-use-after-free; the plain build
# crashes with MALLOC_PERTURB_ and no tcache); now the walk over the home
# records frees those of node 2's jobs the same way.
# Checked on both survivors: the daemon is alive and reported no memory
# misuse, it shows node id 1 down, and it frees the jobs and home records
# (no client, no job, no home record left); then a new job on nodes 1 and
# 3 runs exactly.
T=multi-lost-job
# shellcheck source=tests/multi/common.sh
. "$(dirname "$0")/common.sh"
t_need "$TCLIENT"
# glibc scribbles on freed memory (0x25 bytes: a freed job's world reads
# as a large positive count, its pointers as wild ones); without tcache,
# whose frees skip the scribbling.  ASan ignores both and has its own.
export MALLOC_PERTURB_=37 GLIBC_TUNABLES=glibc.malloc.tcache_count=0
t_up --mode loopback -n 3 --daemon-args "--peer-timeout-ms 1000 --heartbeat-ms 200"

JOBS="lost0 lost1 lost2 lost3 lost4 lost5"
for job in $JOBS; do
  for r in 0 1; do
    SHF_JOB=$job SHF_WORLD=2 SHF_RANK=$r nodes_client 2 "$job-$r" "$TCLIENT" open \
      post="open-$job" hold=never timeout=30000
  done
done
# every job has one home: six home records in all, some on the survivors
homes() { nodes_stat "$1" '.daemon.home_jobs' 2>/dev/null || echo x; }
knows_all() {
  local h1 h2 h3
  h1=$(homes 1) h2=$(homes 2) h3=$(homes 3)
  [ "$((h1 + h2 + h3))" = 6 ] 2>/dev/null && [ "$((h1 + h3))" -ge 1 ]
}
t_until 20000 "the jobs of node 2 to reach their homes, some on nodes 1 and 3" knows_all
for job in $JOBS; do nodes_sync_wait "open-$job.0" "open-$job.1" || t_fail "$job did not open"; done
t_note "6 jobs with all their ranks on node 2, $(( $(homes 1) + $(homes 3) )) of them homed on nodes 1 and 3"

nodes kill --node 2 --signal KILL || t_fail "cannot kill node 2's daemon"
T_KILLED=2
t_note "node 2's daemon killed (-9)"
survivors_done() {
  local i
  for i in 1 3; do
    t_peer_went_down "$i" 1 || return 1
    t_idle "$i" || return 1
    [ "$(homes "$i")" = 0 ] || return 1
  done
}
t_until 20000 "nodes 1 and 3 to take node 2 down and free its jobs and home records" survivors_done
t_fault_check_clean
t_note "nodes 1 and 3: node id 1 down, its jobs freed, no memory misuse"

# the survivors carry on
export SHF_JOB=after SHF_WORLD=4
for r in 0 1 2 3; do
  SHF_RANK=$r nodes_client $([ $r -lt 2 ] && echo 1 || echo 3) "after$r" "$TCLIENT" traffic n=400
done
ok=1
# only the new job's ranks: node 2's clients lost their daemon (killed at exit)
for i in "${!NODES_NAMES[@]}"; do
  case "${NODES_NAMES[$i]}" in
    after*)
      p=${NODES_PIDS[$i]}
      if [ -n "${NODES_STATUS[$p]-}" ]; then st=${NODES_STATUS[$p]}; else wait "$p"; st=$?; fi
      [ "$st" = 0 ] || ok=0 ;;
  esac
done
[ $ok = 1 ] || { cat "$NODES_TMP"/logs/after*.log >&2; t_fail "a job on nodes 1 and 3 failed after the loss"; }
t_fault_check_clean
t_note "a new job on nodes 1 and 3 ran exactly: ok"
