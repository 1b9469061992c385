#!/bin/bash
# tests/slurm/slurm-cluster2.sh - a real two-node Slurm cluster on this
# machine: slurmctld here, two slurmd nodes n1 and n2, each in its own
# network namespace (its own address on a bridge), UTS namespace (its host
# name is its NodeName) and mount namespace (its own /run/shuffle-slurm),
# with the Prolog, Epilog and TaskProlog as docs/operations.md says.  An
# `sbatch -N 2 --comment=shuffle` job as nobody runs `mpirun -np 4` over
# both nodes (orted on n2 through srun): the ranks use the job's daemons
# (one per node, the Prolog's static rendezvous n1:PORT,n2:PORT) with exact
# counts, and each node's Epilog stops its daemon.  Root only; exit 77
# without the Slurm packages, bridges or network namespaces.
# (tests/slurm/slurm-cluster.sh covers the rest on one node.)
set -u
T=slurm-cluster2
W=
fail() {
	echo "$T: FAIL: $*" >&2
	for f in "$W"/log/*.log "$W"/log/*.out "$W"/jobs/out.*; do
		[ -f "$f" ] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }
	done
	exit 1
}
skip() {
	echo "$T: SKIP: $*" >&2
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (slurmd runs the Prolog as root; namespaces)"
for p in slurmctld slurmd sbatch srun scontrol munged mpirun setpriv python3 ip nsenter; do
	command -v $p >/dev/null ||
		skip "$p is not installed (scripts/install-deps installs slurmctld slurmd slurm-client munge)"
done
getent passwd munge >/dev/null || skip "no user munge (package munge)"
if [ -z "${SHF_SLURMC2_IN_NS:-}" ]; then
	unshare --mount --propagation private true 2>/dev/null ||
		skip "cannot create a mount namespace here (unshare --mount)"
	exec env SHF_SLURMC2_IN_NS=1 unshare --mount --propagation private "$0" "$@"
fi
shuffled=${SHF_TEST_SHUFFLED:?}
shufflectl=${SHF_TEST_SHUFFLECTL:?}
build=${SHF_TEST_BUILD_DIR:?}
example=$build/examples/shuffle-example
[ -x "$example" ] || skip "examples/shuffle-example is not built"
prolog=$build/scripts/slurm-prolog
epilog=$build/scripts/slurm-epilog
user=nobody
uid=$(id -u $user)
gid=$(id -g $user)

W=$(mktemp -d /tmp/shf-slurmc2-XXXXXX)
chmod 0755 "$W"
mkdir -m 1777 "$W/jobs"
mkdir -p "$W/munge" "$W/ctld" "$W/spool" "$W/log"
tag=$(($$ % 200 + 20))
br=shfbr$$
ns1=shfn1.$$
ns2=shfn2.$$
net=10.201.$tag
pids=()
cleanup() {
	local p
	[ -n "${SLURM_CONF:-}" ] && scancel --quiet --user="$user" 2>/dev/null
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	# the per-job daemons live in the nodes' namespaces: their pid files
	for p in $(cat "$W"/jobs/daemon.* 2>/dev/null); do
		[ "$(cat /proc/"$p"/comm 2>/dev/null)" = shuffled ] && kill -KILL "$p" 2>/dev/null
	done
	[ -f "$W/munge/pid" ] && kill -TERM "$(cat "$W/munge/pid")" 2>/dev/null
	ip netns del "$ns1" 2>/dev/null
	ip netns del "$ns2" 2>/dev/null
	ip link del "$br" 2>/dev/null
	umount /etc/default /etc/hosts 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

# ---- the network: a bridge here, one namespace per node
ip link add "$br" type bridge 2>/dev/null || skip "cannot make a bridge (ip link add type bridge)"
ip addr add "$net.1/24" dev "$br" && ip link set "$br" up || fail "cannot set up $br"
i=1
for ns in "$ns1" "$ns2"; do
	ip netns add "$ns" 2>/dev/null || skip "cannot make a network namespace"
	ip link add "shfv$i.$$" type veth peer name eth0 netns "$ns" || fail "no veth for $ns"
	ip link set "shfv$i.$$" master "$br" up
	ip -n "$ns" addr add "$net.$((i + 1))/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$ns" link set lo up
	i=$((i + 1))
done
# the node names resolve (slurmd, the Prolog's rendezvous, shuffled)
cp /etc/hosts "$W/hosts"
printf '%s n1\n%s n2\n' "$net.2" "$net.3" >>"$W/hosts"
mount --bind "$W/hosts" /etc/hosts || skip "cannot bind-mount over /etc/hosts"
# n1 reaches n2 over the bridge (bridged traffic may be filtered here)
ip netns exec "$ns2" python3 -c 'import socket,sys
s = socket.socket(); s.bind((sys.argv[1], 7999)); s.listen(); s.settimeout(10); s.accept()' \
	"$net.3" 2>/dev/null &
lpid=$!
ok=
for _ in $(seq 50); do
	ip netns exec "$ns1" python3 -c 'import socket,sys
socket.create_connection((sys.argv[1], 7999), timeout=1)' "$net.3" 2>/dev/null && ok=1 && break
	sleep 0.1
done
kill "$lpid" 2>/dev/null
wait "$lpid" 2>/dev/null
[ -n "$ok" ] || skip "n1 cannot reach n2 over the bridge here (filtered bridge traffic?)"

# ---- munge: its own key and socket, as the munge user
chown munge: "$W/munge"
head -c 1024 /dev/urandom >"$W/munge/key"
chown munge: "$W/munge/key"
chmod 0400 "$W/munge/key"
setpriv --reuid=munge --regid=munge --clear-groups munged --socket="$W/munge/sock" \
	--key-file="$W/munge/key" --log-file="$W/munge/log" --pid-file="$W/munge/pid" \
	--seed-file="$W/munge/seed" || fail "munged did not start: $(cat "$W/munge/log" 2>/dev/null)"

# ---- the shuffle settings the Prolog reads (in our /etc/default only)
mkdir "$W/default"
cp -a /etc/default/. "$W/default/"
printf 'SHUFFLE_SHUFFLED=%s\nSHUFFLE_SHUFFLECTL=%s\nSHUFFLE_CGROUP=no\nSHUFFLE_START_TIMEOUT=20\n' \
	"$shuffled" "$shufflectl" >"$W/default/shuffle-slurm"
mount --bind "$W/default" /etc/default || skip "cannot bind-mount over /etc/default"
mkdir -p /run/shuffle-slurm

# ---- slurm.conf
read -r p1 p2 < <(python3 -c 'import socket
a=[socket.socket() for _ in range(2)]
[s.bind(("127.0.0.1", 0)) for s in a]
print(*[s.getsockname()[1] for s in a])')
export SLURM_CONF=$W/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=shftwo$$
SlurmctldHost=$(hostname -s)($net.1)
SlurmctldPort=$p1
SlurmdPort=$p2
AuthType=auth/munge
AuthInfo=socket=$W/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$W/ctld
SlurmdSpoolDir=$W/spool/%n
SlurmctldPidFile=$W/ctld.pid
SlurmdPidFile=$W/slurmd-%n.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
Prolog=$prolog
Epilog=$epilog
TaskProlog=$prolog
PrologFlags=Alloc
NodeName=n1 NodeAddr=$net.2 CPUs=2 State=UNKNOWN
NodeName=n2 NodeAddr=$net.3 CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i -f "$SLURM_CONF" >"$W/log/slurmctld.out" 2>&1 &
pids+=($!)
# each slurmd in its namespaces: its address, its host name, its own
# /run/shuffle-slurm (the job directories are per node)
i=1
for ns in "$ns1" "$ns2"; do
	mkdir -p "$W/spool/n$i"
	# (nsenter, not ip netns exec: that remounts /sys, without the cgroup
	# file systems slurmd wants)
	nsenter --net="/run/netns/$ns" -- unshare --uts --mount --propagation private bash -c \
		"hostname n$i && mount -t tmpfs -o mode=0755 tmpfs /run/shuffle-slurm &&
		 echo \$\$ > $W/ns$i.pid && exec slurmd -D -f $SLURM_CONF" \
		>"$W/log/slurmd-n$i.out" 2>&1 &
	pids+=($!)
	i=$((i + 1))
done
for _ in $(seq 300); do
	[ "$(sinfo -h -o '%t %D' 2>/dev/null)" = "idle 2" ] && break
	sleep 0.1
done
[ "$(sinfo -h -o '%t %D' 2>/dev/null)" = "idle 2" ] ||
	fail "the nodes did not become idle: $(sinfo 2>&1)"
echo "$T: slurmctld and two slurmd $(slurmd -V | cut -d' ' -f2) up: n1 $net.2 and n2 $net.3, each in its own namespaces"

as_user() { setpriv --reuid="$uid" --regid="$gid" --clear-groups env SLURM_CONF="$SLURM_CONF" "$@"; }
# run in node $1's namespaces (its network, host name and /run/shuffle-slurm)
on_node() {
	nsenter -t "$(cat "$W/ns$1.pid")" -n -m -u -- "${@:2}"
}

# ---- a two-node MPI job: a daemon per node, exact counts, both stopped
cat >"$W/jobs/mpi2.sh" <<EOF
#!/bin/bash
echo "SHF_RUNTIME_DIR=\${SHF_RUNTIME_DIR-unset}"
mpirun --oversubscribe --bind-to none --map-by node --mca pml ob1 --mca btl self,vader,tcp \\
	-np 4 $example -n 4000 -t 30000 || exit 4
# each node's daemon: its pid and its view of the set
srun -N 2 -n 2 bash -c 'cat \$SHF_RUNTIME_DIR/shuffled.pid > $W/jobs/daemon.\$(hostname);
	$shufflectl status --json > $W/jobs/status.\$(hostname)' || exit 5
exit 0
EOF
chmod 755 "$W/jobs/mpi2.sh"
job=$(cd "$W/jobs" && as_user sbatch --parsable --wait -o "$W/jobs/out.%j" -N 2 -n 4 \
	--comment=shuffle "$W/jobs/mpi2.sh")
src=$?
job=${job%%;*}
out=$W/jobs/out.$job
[ "$src" = 0 ] || fail "job $job (-N 2, --comment=shuffle) exited $src: $(cat "$out")"
sent=$(awk '/^rank [0-9]+: sent/ {s += $4} END {print s + 0}' "$out")
got=$(awk '/^rank [0-9]+: sent/ {d += $6} END {print d + 0}' "$out")
[ "$sent" = 16000 ] && [ "$got" = 16000 ] ||
	fail "job $job: sent $sent, delivered $got (want 16000): $(cat "$out")"
for n in 1 2; do
	[ -s "$W/jobs/daemon.n$n" ] || fail "job $job: no daemon on n$n"
	nodes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodes"])' \
		"$W/jobs/status.n$n" 2>/dev/null)
	[ "$nodes" = 2 ] || fail "job $job: the daemon on n$n is in a set of '$nodes' nodes, not 2: $(cat "$W/jobs/status.n$n")"
done
st=
for _ in $(seq 200); do
	st=$(scontrol show job "$job" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
	[ "$st" = COMPLETED ] && break
	sleep 0.1
done
[ "$st" = COMPLETED ] || fail "job $job: state $st"
for n in 1 2; do
	pid=$(cat "$W/jobs/daemon.n$n")
	left=x
	for _ in $(seq 100); do
		left=$(on_node $n ls -A /run/shuffle-slurm)
		[ "$(cat /proc/"$pid"/comm 2>/dev/null)" = shuffled ] && left+=" (pid $pid runs)"
		[ -z "$left" ] && break
		sleep 0.1
	done
	[ -z "$left" ] || fail "job $job: the Epilog on n$n left: $left"
done
echo "$T: job $job (-N 2 --comment=shuffle): mpirun -np 4 over n1 and n2 on a daemon per node (a 2-node set): sent $sent, delivered $got; each Epilog stopped its daemon"
echo "$T: OK"
