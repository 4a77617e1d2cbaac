#!/usr/bin/env bash
# test_walkthrough.sh - dynamotree's README walkthrough
# (shared/seeds/004_*), verbatim through the CLI on an empty store: its
# data model (an account and a link of that account), then symbolic links
# made in directories that do not exist yet, as dynamotree's CreateSymlink
# does, read and listed through.
. "$(dirname "$0")/lib.sh"

t_dynamotree() {
	new_store
	# The first step of the walkthrough: a link whose directory is new.
	run 0 kt ln -s /Accounts/123456 /AccountsByEmail/alice@example.com
	err_empty
	run 0 kt put /Accounts/123456 \
		'{"name": "Alice", "registered": "2015-01-01T19:59:00", "email": "alice@example.com"}'
	run 0 kt put /Accounts/123456/Links/xyzpdq '{"LinkTarget": "http://example.com/"}'
	# "link ¦Accounts¦123456¦Links¦xyzpdq to ¦Links¦xyzpdq": /Links is new.
	run 0 kt ln -s /Accounts/123456/Links/xyzpdq /Links/xyzpdq
	run 0 kt get /Links/xyzpdq
	out_is '{"LinkTarget": "http://example.com/"}'
	run 0 kt get /AccountsByEmail/alice@example.com
	out_has '"name": "Alice"'
	run 0 kt readlink /AccountsByEmail/alice@example.com
	out_is /Accounts/123456
	run 0 kt ls /Accounts/123456/Links
	out_is xyzpdq
	run 0 kt ls /
	out_is "$(printf 'Accounts\nAccountsByEmail\nLinks')"
	# Listing through the link reaches the account's children.
	run 0 kt ls /AccountsByEmail/alice@example.com
	out_is Links
	run 0 kt check
}

run_case "$@"
