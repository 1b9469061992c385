# shellcheck shell=bash
# scripts/lib-daemon.sh - start and stop a private shuffled from a script.
#
#   source scripts/lib-daemon.sh
#   trap shf_daemon_cleanup EXIT
#   shf_daemon_start build/daemon/shuffled [--ring-bytes=4M ...]
#   ... clients find it through $SHF_SOCKET ...
#   shf_daemon_stop
#
# shf_daemon_start makes a fresh temporary directory (under $TMPDIR or
# /tmp), runs the daemon in the background with its runtime directory,
# socket and log in there (single node: --rendezvous=none), and returns
# once the socket accepts connections.  It sets:
#   SHF_DAEMON_PID   the daemon's pid
#   SHF_DAEMON_DIR   the temporary directory
#   SHF_DAEMON_LOG   the daemon's log file
#   SHF_SOCKET       the socket (exported, for clients and shufflectl)
# shf_daemon_stop sends SIGTERM and waits (SIGKILL after 10 s); it fails
# unless the daemon exited with status 0 and removed its socket.
# shf_daemon_cleanup stops a daemon that still runs and removes the
# directory; call it from an EXIT trap so nothing is left behind.

SHF_DAEMON_PID=
SHF_DAEMON_DIR=
SHF_DAEMON_LOG=

# Does something accept connections on the SOCK_SEQPACKET socket $1?
shf_socket_ready() {
	python3 - "$1" <<'EOF' 2>/dev/null
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(1)
s.connect(sys.argv[1])
EOF
}

# shf_daemon_start SHUFFLED [OPTION...]
shf_daemon_start() {
	local shuffled=$1
	shift
	if [ -n "$SHF_DAEMON_PID" ]; then
		echo "shf_daemon_start: a daemon (pid $SHF_DAEMON_PID) is already running" >&2
		return 1
	fi
	if [ ! -x "$shuffled" ]; then
		echo "shf_daemon_start: $shuffled is not an executable" >&2
		return 1
	fi
	SHF_DAEMON_DIR=$(mktemp -d "${TMPDIR:-/tmp}/shf-daemon.XXXXXX") || return 1
	SHF_DAEMON_LOG=$SHF_DAEMON_DIR/shuffled.log
	export SHF_SOCKET=$SHF_DAEMON_DIR/run/shuffled.sock
	# the caller's SHF_* settings must not redirect this daemon elsewhere
	env -u SHF_RUNTIME_DIR -u SHF_CONFIG -u SHF_NODE -u SHF_SOCKET \
		"$shuffled" --runtime-dir="$SHF_DAEMON_DIR/run" --rendezvous=none \
		--log-file="$SHF_DAEMON_LOG" "$@" </dev/null >>"$SHF_DAEMON_LOG" 2>&1 &
	SHF_DAEMON_PID=$!
	for _ in $(seq 1 100); do
		if ! kill -0 "$SHF_DAEMON_PID" 2>/dev/null; then
			wait "$SHF_DAEMON_PID" || true
			echo "shf_daemon_start: shuffled exited during start-up; its log:" >&2
			tail -n 20 "$SHF_DAEMON_LOG" >&2
			SHF_DAEMON_PID=
			return 1
		fi
		if shf_socket_ready "$SHF_SOCKET"; then
			return 0
		fi
		sleep 0.05
	done
	echo "shf_daemon_start: shuffled not ready after 5 s; its log:" >&2
	tail -n 20 "$SHF_DAEMON_LOG" >&2
	shf_daemon_stop || true
	return 1
}

# shf_daemon_stop: SIGTERM, wait, check.
shf_daemon_stop() {
	[ -n "$SHF_DAEMON_PID" ] || return 0
	local pid=$SHF_DAEMON_PID rc=0
	SHF_DAEMON_PID=
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "shf_daemon_stop: shuffled (pid $pid) ignored SIGTERM for 10 s: killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "shf_daemon_stop: shuffled exited with status $rc" >&2
		return 1
	fi
	if [ -e "$SHF_SOCKET" ]; then
		echo "shf_daemon_stop: $SHF_SOCKET left behind" >&2
		return 1
	fi
	return 0
}

# shf_daemon_cleanup: for an EXIT trap.  Keeps the exit status.
shf_daemon_cleanup() {
	local rc=$?
	shf_daemon_stop >/dev/null 2>&1 || true
	if [ -n "$SHF_DAEMON_DIR" ] && [ -d "$SHF_DAEMON_DIR" ]; then
		rm -rf -- "$SHF_DAEMON_DIR"
	fi
	SHF_DAEMON_DIR=
	return "$rc"
}
