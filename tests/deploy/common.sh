# shellcheck shell=bash
# tests/deploy/common.sh - what the deploy tests share (sourced).
#
# Each test configures a fresh build of the source tree
# ($SHF_TEST_SOURCE_DIR) in a temporary directory with
# --prefix=TMP/prefix, installs it with `meson install`, and then uses only
# the installed tree: programs run under `env -i` with a minimal PATH and
# no LD_LIBRARY_PATH.  DEPLOY_KEEP=1 keeps the directory.
set -uo pipefail

src=${SHF_TEST_SOURCE_DIR:?SHF_TEST_SOURCE_DIR not set (run through meson test)}
me=$(basename "$0" .sh)
tmp=$(mktemp -d "/tmp/shf-$me.XXXXXX") || exit 1
# other users (the unprivileged run) must reach the installed tree
chmod 755 "$tmp"
prefix=$tmp/prefix
pids=()

say() { echo "$me: $*"; }
fail() {
	echo "$me: FAIL: $*" >&2
	exit 1
}
skip() {
	echo "$me: SKIP: $*"
	exit 77
}

cleanup() {
	local rc=$?
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	if [ "${DEPLOY_KEEP:-0}" = 1 ]; then
		echo "$me: kept $tmp"
	else
		rm -rf --one-file-system "$tmp"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# configure_install NAME [MESON OPTIONS...]: configure $src into $tmp/NAME
# with --prefix=$prefix, build, install.  Output in $tmp/NAME.log.
configure_install() {
	local name=$1
	shift
	local b=$tmp/$name
	say "meson setup $* (prefix $prefix)"
	if ! meson setup "$b" "$src" --prefix="$prefix" --buildtype=debugoptimized \
		-Db_sanitize=none "$@" >"$tmp/$name.log" 2>&1; then
		tail -n 30 "$tmp/$name.log" >&2
		fail "meson setup failed"
	fi
	say "ninja: $(ninja -C "$b" -t targets all 2>/dev/null | grep -c ': c_LINKER') link targets"
	if ! ninja -C "$b" -j "${SHF_DEPLOY_JOBS:-2}" >>"$tmp/$name.log" 2>&1; then
		grep -E 'error|FAILED' "$tmp/$name.log" | head -20 >&2
		fail "build failed"
	fi
	if ! meson install -C "$b" --no-rebuild >>"$tmp/$name.log" 2>&1; then
		tail -n 30 "$tmp/$name.log" >&2
		fail "meson install failed"
	fi
}

# the installed library's directory (multiarch or not) and its .pc
libdir_of() {
	local pc
	pc=$(find "$prefix" -name shuffle-client.pc -path '*/pkgconfig/*' | head -n 1)
	[ -n "$pc" ] || fail "no shuffle-client.pc installed under $prefix"
	pcdir=$(dirname "$pc")
	libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir shuffle-client)
	[ -n "$libdir" ] || fail "shuffle-client.pc has no libdir"
}

# A minimal environment: no LD_LIBRARY_PATH, PATH with the installed bin
# (not sbin: it is not on a Debian user's PATH) and the system's
# directories only.
clean_env() {
	env -i PATH="$prefix/bin:/usr/bin:/bin" HOME="${run_home:-$tmp}" \
		LANG=C "$@"
}

# run_as USER CMD...: as root with USER != root, through setpriv
run_as() {
	local who=$1
	shift
	if [ "$who" = root ] || [ "$who" = self ]; then
		clean_env "$@"
	else
		clean_env setpriv --reuid="$who" --regid="$who" --clear-groups -- env "$@"
	fi
}

# start_bg USER CMD...: run_as in the background, with $bg_pid the pid
# of CMD itself (env and setpriv exec it), so that signals reach it
start_bg() {
	local who=$1
	shift
	local -a pre=()
	[ "$who" = root ] || [ "$who" = self ] ||
		pre=(setpriv --reuid="$who" --regid="$who" --clear-groups -- env)
	env -i PATH="$prefix/bin:/usr/bin:/bin" HOME="${run_home:-$tmp}" LANG=C \
		"${pre[@]}" "$@" </dev/null &
	bg_pid=$!
	pids+=("$bg_pid")
}

# check_ldd FILE: every shared library FILE needs resolves without
# LD_LIBRARY_PATH
check_ldd() {
	local out
	out=$(env -i /usr/bin/ldd "$1" 2>&1) || fail "ldd $1: $out"
	if grep -q 'not found' <<<"$out"; then
		echo "$out" >&2
		fail "$1: a library is not found without LD_LIBRARY_PATH"
	fi
}

# build_app WHO DIR: compile examples/shuffle-example.c against the
# installed header and .pc, as the docs tell users (docs/install.md), into
# DIR/app, as WHO
build_app() {
	local who=$1 dir=$2
	cp "$src/examples/shuffle-example.c" "$dir/app.c"
	[ "$who" = root ] || [ "$who" = self ] || chown "$who" "$dir/app.c"
	# shellcheck disable=SC2016 # expanded by the inner shell
	run_as "$who" PKG_CONFIG_PATH="$pcdir" sh -c '
		cc -O2 -pthread -o "$1/app" "$1/app.c" $(pkg-config --cflags --libs shuffle-client) \
			-Wl,-rpath,"$(pkg-config --variable=libdir shuffle-client)"' sh "$dir" \
		>"$dir/cc.log" 2>&1 || { cat "$dir/cc.log" >&2; fail "compiling the app against the installed tree failed"; }
	readelf -d "$dir/app" | grep -E 'RUNPATH|RPATH' | grep -qF "$libdir" ||
		fail "the app has no run path to $libdir"
	check_ldd "$dir/app"
}

# wait_ctl WHO SOCKET PID: until `shufflectl ping` answers (20 s at most),
# failing at once if PID exits
wait_ctl() {
	local who=$1 sock=$2 pid=$3 i
	for ((i = 0; i < 200; i++)); do
		run_as "$who" shufflectl -s "$sock" --timeout 1000 ping >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || fail "shuffled (pid $pid) exited during start-up"
		sleep 0.1
	done
	fail "shuffled did not answer on $sock within 20 s"
}

# run_job WHO SOCKET DIR N: N ranks of DIR/app against the daemon at
# SOCKET; each must report every message delivered
run_job() {
	local who=$1 sock=$2 dir=$3 n=$4 r rp=() bad=0
	for ((r = 0; r < n; r++)); do
		run_as "$who" SHF_SOCKET="$sock" SHF_RANK=$r SHF_WORLD=$n SHF_JOB="deploy-$who" \
			timeout -k 5 60 "$dir/app" -n 2000 >"$dir/rank-$r.out" 2>&1 &
		rp+=($!)
	done
	for r in "${!rp[@]}"; do
		wait "${rp[$r]}" || {
			bad=1
			cat "$dir/rank-$r.out" >&2
		}
	done
	[ $bad = 0 ] || fail "the app's ranks failed (as $who)"
	local sent delivered
	sent=$(cat "$dir"/rank-*.out | awk '/^rank [0-9]+: sent/ { s += $4 } END { print s + 0 }')
	delivered=$(cat "$dir"/rank-*.out | awk '/^rank [0-9]+: sent/ { d += $6 } END { print d + 0 }')
	[ "$sent" -eq $((n * 2000)) ] && [ "$delivered" -eq "$sent" ] ||
		fail "as $who: sent $sent delivered $delivered (want $((n * 2000)) each)"
	say "as $who: $n ranks, sent $sent, delivered $delivered"
}
