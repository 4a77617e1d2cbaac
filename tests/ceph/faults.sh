#!/usr/bin/env bash
# faults.sh - a RADOS tree keeps every acknowledged write while the cluster
# under it loses an OSD and its monitor stops answering.
#
# usage: faults.sh SOURCE_DIR KEYTREE_CLI FAULT_WRITER
#
# Starts its own throwaway cluster (scripts/ceph-dev: three memstore OSDs,
# pool size 3, min_size 2), so that the faults cannot disturb other tests,
# and runs one writer client (kt_fault_writer) through all of it:
#
#  1. osd.1 is killed with SIGKILL (memstore loses everything it held)
#     while the writer runs; the writer must go on with two OSDs;
#  2. osd.1 is started again, comes back empty and is backfilled; the
#     writer must go on; the test waits until every placement group is
#     active+clean again;
#  3. the monitor is stopped (SIGSTOP: it hangs, as a monitor on a host
#     that stopped answering would): the writer, already connected, must
#     go on, and a new client must fail with a clear error within its
#     configured client_mount_timeout rather than hang or damage anything;
#     then the monitor is continued and a new client works again.
#
# Then the writer is stopped: it must never have seen a failed operation,
# every put and rename it acknowledged must be in the tree with its value,
# and `keytree check` must find no violation.  Driven by CTest (ceph_faults).
set -euo pipefail

src=$1
cli=$2
writer=$3

fail() { printf 'ceph_faults: FAIL: %s\n' "$*" >&2; exit 1; }
step() { printf 'ceph_faults: %s\n' "$*"; }

work=$(mktemp -d "${TMPDIR:-/tmp}/kt-faults.XXXXXX")
cdir=$work/ceph
conf=$cdir/ceph.conf
loc=rados:keytree/faults
wpid=
mon_stopped=

cleanup() {
	# Every step, whatever the one before did (set -e would end the trap
	# at the first kill of a process already gone, and leave the cluster
	# running).
	set +e
	[ -n "$mon_stopped" ] && kill -CONT "$mon_stopped" 2>/dev/null
	[ -n "$wpid" ] && kill -KILL "$wpid" 2>/dev/null
	bash "$src/scripts/ceph-dev" stop --dir "$cdir" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

dev() { bash "$src/scripts/ceph-dev" "$@" --dir "$cdir"; }
kt() { timeout 120 "$cli" -s "$loc" -o ceph_conf="$conf" "$@"; }
acks() { grep -c . "$work/acks" || true; }

# What the writer and the OSDs are waiting on, for the log of a failure:
# the writer's stacks (with gdb, when installed), each OSD's blocked
# operations and placement-group states (admin sockets answer without the
# monitor), and whether the writer moves again once the monitor runs.
stalled() {
	local i n
	set +e
	echo "ceph_faults: the writer's threads (name, kernel wait channel):" >&2
	for i in /proc/"$wpid"/task/*; do
		printf '  %s %s\n' "$(cat "$i/comm" 2>/dev/null)" \
			"$(cat "$i/wchan" 2>/dev/null)" >&2
	done
	if command -v gdb >/dev/null; then
		timeout 60 gdb -p "$wpid" -batch -ex 'thread apply all bt' \
			>"$work/gdb" 2>&1
		if grep -q '^Thread' "$work/gdb"; then
			echo "ceph_faults: the writer's stacks:" >&2
			grep -E '^(Thread|#)' "$work/gdb" |
				grep -Ev 'libc\.so|libstdc' | head -80 >&2
		else
			echo "ceph_faults: gdb could not read the writer's" \
				"stacks: $(grep -iE 'ptrace|denied|error' "$work/gdb" | head -2)" >&2
		fi
	fi
	for i in 0 1 2; do
		echo "ceph_faults: osd.$i:" >&2
		timeout 20 ceph --admin-daemon "$cdir/run/osd.$i.asok" \
			dump_pgstate_history 2>&1 | grep currently | sort | uniq -c >&2
		timeout 20 ceph --admin-daemon "$cdir/run/osd.$i.asok" \
			dump_blocked_ops 2>&1 | head -40 >&2
	done
	tail -20 "$cdir/log/cluster.log" >&2 2>/dev/null
	if [ -n "$mon_stopped" ]; then
		kill -CONT "$mon_stopped"
		mon_stopped=
		n=$(acks)
		sleep 20
		echo "ceph_faults: with the monitor running again, the writer" \
			"acknowledged $(($(acks) - n)) more in 20 s" >&2
	fi
	set -e
}

# Wait up to $1 seconds for $2 more acknowledged operations than $3.
wait_acks() {
	local t=$(($1 * 10)) more=$2 base=$3
	while [ "$(acks)" -lt $((base + more)) ]; do
		kill -0 "$wpid" 2>/dev/null ||
			fail "the writer exited: $(cat "$work/err")"
		t=$((t - 1))
		if [ "$t" -le 0 ]; then
			stalled
			fail "no $more operations in $1 s after $4 ($(acks) acknowledged in all)"
		fi
		sleep 0.1
	done
}

step "starting a cluster of three OSDs in $cdir"
dev start >"$work/start.log" 2>&1 || { cat "$work/start.log"; fail "ceph-dev start"; }

KEYTREE_CEPH_CONF=$conf "$writer" "$loc" "$work/stop" >"$work/acks" \
	2>"$work/err" &
wpid=$!
wait_acks 60 1 0 "starting"

n=$(acks)
wait_acks 30 50 "$n" "the start"
n=$(acks)
step "killing osd.1 after $n acknowledged operations"
dev kill-osd 1 >/dev/null
wait_acks 60 100 "$n" "osd.1 was killed"

n=$(acks)
step "starting osd.1 again (empty; it is backfilled) after $n operations"
dev start-osd 1 >/dev/null
wait_acks 60 100 "$n" "osd.1 was started again"
# The monitor is stopped only once the cluster has settled: a placement
# group whose peering or backfill still needs a new OSD map from the
# monitor (up_thru, pg_temp) would stay blocked until it came back, which
# is Ceph's behaviour, not ours to test.  Seen once in CI, with the
# monitor stopped right after osd.1 was started again.
dev wait-clean 120 >"$work/clean" 2>&1 ||
	fail "the cluster did not settle after osd.1 came back: $(cat "$work/clean")"
step "$(cat "$work/clean")"
wait_acks 60 50 "$(acks)" "osd.1 came back"

mon=$(cat "$cdir/run/mon.a.pid")
n=$(acks)
step "stopping the monitor (pid $mon) after $n operations"
kill -STOP "$mon"
mon_stopped=$mon
wait_acks 60 100 "$n" "the monitor was stopped"
t0=$(date +%s)
if CEPH_ARGS="--client_mount_timeout 5" kt get /w/1 >"$work/get" 2>"$work/get.err"; then
	fail "a new client read the tree with the monitor stopped"
fi
t1=$(date +%s)
grep -q "cannot connect to the cluster" "$work/get.err" ||
	fail "a new client without a monitor said: $(cat "$work/get.err")"
step "a new client gave up after $((t1 - t0)) s: $(cat "$work/get.err")"
kill -CONT "$mon"
mon_stopped=
kt get /w/1 >/dev/null || fail "a new client after the monitor came back"
wait_acks 60 20 "$(acks)" "the monitor came back"

touch "$work/stop"
rc=0
wait "$wpid" || rc=$?
wpid=
[ "$rc" -eq 0 ] || fail "the writer failed (status $rc): $(cat "$work/err")"
grep -q '^rounds ' "$work/acks" || fail "the writer did not finish"
step "the writer saw no failure: $(grep '^rounds ' "$work/acks")"

# Every acknowledged operation is in the tree, with its value.
kt dump >"$work/dump" || fail "keytree dump"
python3 - "$work/acks" "$work/dump" <<'EOF' || fail "acknowledged writes are missing"
import json, sys
acks = [l.split() for l in open(sys.argv[1]) if l.startswith(("put ", "mv "))]
recs = {}
for line in open(sys.argv[2]):
    r = json.loads(line)
    if "path" in r:
        recs[r["path"]] = r
bad = []
for op, path in acks:
    if op == "put" and path.startswith("/d/"):
        continue  # moved to /r/ by the rename that follows
    if op == "mv":
        path += "/item"
    r = recs.get(path)
    i = int(path.split("/")[2])
    want = "v%d" % i
    if r is None:
        bad.append(path + " is missing")
    elif not isinstance(r.get("value"), str) or \
            not r["value"].startswith(want) or \
            len(r["value"]) != 3000 + i % 100:
        bad.append(path + " has another value")
for b in bad[:10]:
    print("ceph_faults:", b, file=sys.stderr)
print("ceph_faults: %d acknowledged operations checked, %d wrong"
      % (len(acks), len(bad)))
sys.exit(1 if bad else 0)
EOF
kt check || fail "keytree check"
step "ok"
