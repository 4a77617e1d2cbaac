#!/usr/bin/env bash
# check-exports.sh - the shared library exports exactly the public API.
#
# usage: check-exports.sh LIBKEYTREE.so KEYTREE.H
#
# Every function declared with KT_EXTERN in the header must be a defined
# dynamic symbol (a missing KT_EXTERN, or a function not written yet, would
# break users at link time), and no other symbol may be exported except the
# few the toolchain adds (a leaked kt__ internal or a LevelDB wrapper would
# become API by accident).
set -euo pipefail

lib=$1
header=$2

expected=$(sed -n 's/^KT_EXTERN.*[ *]\(kt_[a-z0-9_]*\)(.*/\1/p' "$header" |
	sort -u)
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' |
	grep -v -x -E '_init|_fini|_edata|_end|__bss_start' | sort -u)

status=0
missing=$(comm -23 <(printf '%s\n' "$expected") <(printf '%s\n' "$exported"))
extra=$(comm -13 <(printf '%s\n' "$expected") <(printf '%s\n' "$exported"))
if [ -n "$missing" ]; then
	echo "check-exports: declared KT_EXTERN in $header but not exported:"
	printf '  %s\n' $missing
	status=1
fi
if [ -n "$extra" ]; then
	echo "check-exports: exported but not public API:"
	printf '  %s\n' $extra
	status=1
fi
if [ "$status" -eq 0 ]; then
	echo "check-exports: $(printf '%s\n' "$expected" | wc -l) functions" \
		"exported, nothing else"
fi
exit "$status"
