#!/usr/bin/env bash
# run.sh - install keytree into a temporary prefix and use it from outside.
#
# usage: run.sh BUILD-DIR SOURCE-DIR VERSION
# environment: CMAKE_COMMAND, CC (default cmake, cc), KT_CONSUMER_FLAGS
# (extra compile and link flags, e.g. the sanitizers the library was built
# with).
#
# Runs `cmake --install BUILD-DIR --prefix TMP`, checks the installed files,
# then builds tests/install/consumer/consumer.c four ways (shared and static,
# with pkg-config and with find_package(keytree)), runs each on a fresh store
# and checks that it prints "hello".  Driven by the CTest test
# install_consumer.
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
version=$3
cmake=${CMAKE_COMMAND:-cmake}
cc=${CC:-cc}
read -r -a flags <<<"${KT_CONSUMER_FLAGS:-}"

work=$(mktemp -d "${TMPDIR:-/tmp}/kt-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
consumer=$src/tests/install/consumer

step() { printf 'install: %s\n' "$*"; }
die() { printf 'install: FAIL: %s\n' "$*" >&2; exit 1; }

# Run a consumer binary on a new store and check what it prints.
check_run() {
	local exe=$1 out
	step "run $(basename "$exe")"
	out=$("$exe" "$work/store-$(basename "$exe")") ||
		die "$exe exited with $?"
	[ "$out" = "hello" ] || die "$exe printed '$out', expected 'hello'"
}

# A statically linked consumer must not need libkeytree.so.
check_static() {
	if readelf -d "$1" | grep -q 'NEEDED.*libkeytree'; then
		die "$1 is linked against the shared libkeytree"
	fi
}

step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; die "cmake --install failed"; }

# The libraries may be under lib/ or lib/<multiarch>/.
pc=$(find "$prefix" -name keytree.pc -path '*/pkgconfig/*')
[ -n "$pc" ] || die "no keytree.pc installed"
libdir=$(dirname "$(dirname "$pc")")
major=${version%%.*}
for f in include/keytree.h; do
	[ -f "$prefix/$f" ] || die "$f not installed"
done
for f in libkeytree.a libkeytree.so "libkeytree.so.$major" \
	"libkeytree.so.$version" cmake/keytree/keytreeConfig.cmake \
	cmake/keytree/keytreeConfigVersion.cmake; do
	[ -e "$libdir/$f" ] || die "${libdir#$prefix/}/$f not installed"
done
soname=$(readelf -d "$libdir/libkeytree.so.$version" |
	sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libkeytree.so.$major" ] ||
	die "SONAME is '$soname', expected libkeytree.so.$major"

# --- pkg-config -----------------------------------------------------------
export PKG_CONFIG_PATH=$libdir/pkgconfig
pcver=$(pkg-config --modversion keytree)
[ "$pcver" = "$version" ] || die "pkg-config version $pcver != $version"
read -r -a pc_cflags <<<"$(pkg-config --cflags keytree)"
read -r -a pc_libs <<<"$(pkg-config --libs keytree)"
read -r -a pc_static <<<"$(pkg-config --libs --static keytree)"

step "pkg-config, shared: ${pc_cflags[*]} ${pc_libs[*]}"
"$cc" "${flags[@]}" "${pc_cflags[@]}" -o "$work/pc_shared" \
	"$consumer/consumer.c" "${pc_libs[@]}" "-Wl,-rpath,$libdir"
check_run "$work/pc_shared"

# -lkeytree would pick the .so next to the .a; name the archive itself.
static_libs=("${pc_static[@]/#-lkeytree/-l:libkeytree.a}")
step "pkg-config, static: ${pc_cflags[*]} ${static_libs[*]}"
"$cc" "${flags[@]}" "${pc_cflags[@]}" -o "$work/pc_static" \
	"$consumer/consumer.c" "${static_libs[@]}"
check_static "$work/pc_static"
check_run "$work/pc_static"

# --- find_package(keytree) ------------------------------------------------
step "find_package(keytree)"
"$cmake" -S "$consumer" -B "$work/cmake-build" \
	-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
	-DCMAKE_C_FLAGS="${flags[*]}" -DCMAKE_EXE_LINKER_FLAGS="${flags[*]}" \
	>"$work/configure.log" 2>&1 ||
	{ cat "$work/configure.log"; die "configuring the consumer failed"; }
found=$(sed -n 's/^keytree_DIR:PATH=//p' "$work/cmake-build/CMakeCache.txt")
case $found in
"$libdir"/cmake/keytree) ;;
*) die "find_package found keytree in '$found', not in $prefix" ;;
esac
"$cmake" --build "$work/cmake-build" >"$work/build.log" 2>&1 ||
	{ cat "$work/build.log"; die "building the consumer failed"; }
check_run "$work/cmake-build/consumer_shared"
check_static "$work/cmake-build/consumer_static"
check_run "$work/cmake-build/consumer_static"

step "ok"
