#!/usr/bin/env bash
# valgrind_cli.sh BUILD-DIR - run every CLI test case (tests/cli/test_*.sh)
# with the keytree binary under valgrind memcheck.
#
# Each case runs as CTest runs it, but with KT_BIN pointing at a wrapper
# that execs `valgrind --leak-check=full --error-exitcode=99` on the real
# binary and writes one log per process.  A memcheck error or a definite or
# indirect leak makes that keytree run exit 99, which fails its case, and
# every log is checked besides, so an error in a run whose status a case
# does not look at is caught too.  "Still reachable" memory (LevelDB's
# process-wide environment) is not an error.  Prints one line per case and
# a summary; exit status 0 when all are clean.
#
# Environment: KT_VALGRIND_CASES (a grep -E pattern on "group__case" to
# run a subset), KT_VALGRIND_KEEP (a directory to keep the logs in).
set -uo pipefail

build=${1:?usage: valgrind_cli.sh BUILD-DIR}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$build/tools/keytree
rows=$build/tools/kt_cli_rows
[ -x "$bin" ] || { echo "no $bin: build the tree first" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/kt-valgrind.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/logs"
cat >"$work/keytree" <<WRAP
#!/bin/sh
exec valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \\
	--show-leak-kinds=definite,indirect --error-exitcode=99 \\
	--log-file="$work/logs/vg.%p.log" "$bin" "\$@"
WRAP
chmod +x "$work/keytree"

pass=0 failed=()
start=$(date +%s)
for script in "$src"/tests/cli/test_*.sh; do
	group=$(basename "$script" .sh)
	group=${group#test_}
	for case in $(sed -n 's/^t_\([a-z0-9_]*\)().*/\1/p' "$script"); do
		if [ -n "${KT_VALGRIND_CASES:-}" ] &&
			! grep -qE "$KT_VALGRIND_CASES" <<<"${group}__$case"; then
			continue
		fi
		rm -f "$work"/logs/*
		if KT_BIN="$work/keytree" KT_ROWS="$rows" KT_SRC="$src" \
			KT_BUILD="$build" CMAKE_COMMAND="${CMAKE_COMMAND:-cmake}" \
			bash "$script" "$case" >"$work/out" 2>&1 &&
			! grep -qs . "$work"/logs/*; then
			pass=$((pass + 1))
			echo "ok   ${group}__$case"
		else
			failed+=("${group}__$case")
			echo "FAIL ${group}__$case"
			tail -n 20 "$work/out"
			cat "$work"/logs/* 2>/dev/null | head -n 60
		fi
		if [ -n "${KT_VALGRIND_KEEP:-}" ]; then
			mkdir -p "$KT_VALGRIND_KEEP/${group}__$case"
			cp "$work"/logs/* "$KT_VALGRIND_KEEP/${group}__$case/" \
				2>/dev/null || true
		fi
	done
done
echo "valgrind_cli: ${pass} cases clean, ${#failed[@]} failed," \
	"$(($(date +%s) - start)) s"
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
