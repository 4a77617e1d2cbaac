#!/usr/bin/env bash
# Store locations on the command line: -s takes a directory or
# rados:POOL[/NAMESPACE]/TREE; a malformed RADOS location is refused with
# the part at fault named (and nothing made on disk); "./rados:x" is a
# directory; -o ceph_conf=PATH and -o ceph_client=NAME reach the library.
# Nothing here needs a Ceph cluster, but with KT_CLI_ENGINE=rados
# t_store_options also opens a tree with the options alone.
. "$(dirname "$0")/lib.sh"

# Nothing was made in the working directory ($TMP, which also holds the
# scratch files out and err).
no_new_files() {
	local extra
	extra=$(ls -A "$TMP" | grep -vxE 'out|err' || true)
	[ -z "$extra" ] || fail "files were made: $extra"
}

t_help() {
	run 0 kt --help
	out_has "rados:POOL/TREE or rados:POOL/NAMESPACE/TREE"
	out_has "./rados:"
	out_has "-o ceph_conf=PATH"
	out_has "\$KEYTREE_CEPH_CONF"
	out_has "-o ceph_client=NAME"
	out_has "\$KEYTREE_CEPH_CLIENT"
}

t_bad_location() {
	local loc want
	while IFS='|' read -r loc want; do
		run 1 kt -s "$loc" init
		err_is "keytree: $loc: $want"
		run 1 kt -s "$loc" put /x hi
		err_has "keytree: $loc: $want"
		KEYTREE_STORE=$loc run 1 kt get /x
		err_has "keytree: $loc: $want"
	done <<'EOF'
rados:|the pool name is empty (a RADOS location is rados:POOL/TREE or rados:POOL/NAMESPACE/TREE)
rados:pool|no tree name after the pool (a RADOS location is rados:POOL/TREE or rados:POOL/NAMESPACE/TREE)
rados:p/|the tree name is empty (a RADOS location is rados:POOL/TREE or rados:POOL/NAMESPACE/TREE)
rados:p//t|the namespace is empty (a RADOS location is rados:POOL/TREE or rados:POOL/NAMESPACE/TREE)
rados:p/a/b/c|too many '/' (a RADOS location is rados:POOL/TREE or rados:POOL/NAMESPACE/TREE; a tree name has no '/')
rados:p/t t|the tree name 't t' has ' ' at byte 1; a tree name is made of A-Z a-z 0-9 . _ -
rados:p/ns/a+b|the tree name 'a+b' has '+' at byte 1; a tree name is made of A-Z a-z 0-9 . _ -
EOF
	run 1 kt -s "rados:p/$(printf 'x%.0s' {1..101})" init
	err_has "the tree name is 101 bytes, more than 100"
	no_new_files
}

# The store options reach kt_open: a bad client name is refused before
# anything is connected to, whether it comes from -o or the environment.
t_store_options() {
	run 1 kt -o ceph_client=admin -s rados:p/t ls
	err_is "keytree: rados:p/t: ceph_client 'admin' is not a client name: 'client.' and an id, as in client.admin"
	KEYTREE_CEPH_CLIENT=bob run 1 kt -s rados:p/t ls
	err_has "ceph_client 'bob'"
	KEYTREE_CEPH_CLIENT=bob run 1 kt --option ceph_client=carol -s rados:p/t ls
	err_has "ceph_client 'carol'"
	run 2 kt -o ceph_confx=/etc/ceph/ceph.conf -s rados:p/t ls
	err_has "unknown store option 'ceph_confx'"
	run 2 kt -o ceph_conf -s rados:p/t ls
	err_has "unknown store option 'ceph_conf'"
	run 2 kt -o ceph_conf= -s rados:p/t ls
	err_has "store option 'ceph_conf' needs a value"
	run 2 kt -s rados:p/t ls -o ceph_conf=x
	no_new_files
	if engine_is leveldb "a directory store does not use them"; then
		run 0 kt -o ceph_conf=/nonexistent -o ceph_client=client.x -s d init
		run 0 kt -o ceph_conf=/nonexistent -s d put /x hi
		run 0 kt -s d get /x
		out_is "hi"
	else
		# A RADOS tree reached through them: -o wins over the
		# environment, and a file that is not there is named.
		local conf=$KEYTREE_CEPH_CONF
		KEYTREE_CEPH_CONF=/nonexistent run 0 kt -o "ceph_conf=$conf" init
		KEYTREE_CEPH_CONF=/nonexistent run 0 kt -o "ceph_conf=$conf" \
			-o ceph_client=client.admin put /x hi
		run 1 kt -o ceph_conf=/nonexistent get /x
		err_is "keytree: $KEYTREE_STORE: /nonexistent: No such file or directory"
		run 0 kt get /x
		out_is "hi"
		no_new_files
	fi
}

# A directory whose name starts with "rados:" is reached as ./rados:...
t_dot_slash() {
	engine_only leveldb "it makes a directory store named ./rados:x"
	run 1 kt -s rados:x init
	err_has "no tree name after the pool"
	no_new_files
	run 0 kt -s ./rados:x init
	[ -f "rados:x/CURRENT" ] || fail "no LevelDB store in ./rados:x"
	run 0 kt -s ./rados:x put /a/b v
	run 0 kt -s "$TMP/rados:x" get /a/b
	out_is "v"
	KEYTREE_STORE=./rados:x run 0 kt ls /a
	out_is "b"
}

run_case "$@"
