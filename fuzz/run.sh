#!/usr/bin/env bash
# run.sh FUZZER SEEDS [LIBFUZZER-ARGS...] - the CTest driver of one fuzz
# target: every seed must pass, then the target fuzzes a copy of its seed
# corpus for KT_FUZZ_SECONDS seconds (default 60).  A crash or a broken
# property fails the test; the input that caused it is kept in
# KT_FUZZ_ARTIFACTS (default /tmp/kt-fuzz-artifacts) and shown in the log
# in base64, so that it can be replayed with `FUZZER FILE`.
set -euo pipefail

fuzzer=$1
seeds=$2
shift 2
secs=${KT_FUZZ_SECONDS:-60}
keep=${KT_FUZZ_ARTIFACTS:-/tmp/kt-fuzz-artifacts}
name=$(basename "$fuzzer")

work=$(mktemp -d "${TMPDIR:-/tmp}/kt-fuzzrun.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts" "$keep"
cp "$seeds"/* "$work/corpus/"

status=0
echo "== $name: the seeds"
"$fuzzer" "$@" -artifact_prefix="$work/artifacts/" "$seeds"/* || status=$?
if [ "$status" -eq 0 ]; then
	echo "== $name: fuzzing for $secs s"
	# LevelDB's memtable keeps what a write allocated, so every writing
	# input looks like a leak to libFuzzer's per-input check, which then
	# scans the whole heap and costs 90% of the time: the seeds above run
	# with it, the fuzzing loop without (leaks are still reported at exit).
	"$fuzzer" "$@" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2560 \
		-max_len=4096 -print_final_stats=1 -detect_leaks=0 \
		-artifact_prefix="$work/artifacts/" "$work/corpus" || status=$?
fi
if [ "$status" -ne 0 ]; then
	for f in "$work"/artifacts/*; do
		[ -e "$f" ] || continue
		cp "$f" "$keep/$name-$(basename "$f")"
		echo "== $name: failing input $keep/$name-$(basename "$f"):"
		base64 "$f" | head -c 20000
		echo
	done
	echo "== $name: FAILED (status $status)"
	exit 1
fi
echo "== $name: passed"
