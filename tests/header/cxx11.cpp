/*
 * cxx11.cpp - compiles keytree.h alone as C++11 (see header_cxx11 in
 * cmake/keytreeTests.cmake): its extern "C" block, initializer macros and
 * enum must all be valid C++ and give C linkage.
 */
#include "keytree.h"

#include <type_traits>

static_assert(
	std::is_same<decltype(&kt_open), int (*)(kt_store **, const char *,
						 const kt_options *)>::value,
	"kt_open keeps its signature");
static_assert(KT_ITEROVER < 0 && KT_OK == 0, "status codes");
static_assert(KT_VALUE_MAX == (1ULL << 40), "KT_VALUE_MAX");

int kt_header_cxx11();

int kt_header_cxx11()
{
	kt_options opts = KT_OPTIONS_INIT;
	kt_create_options copts = KT_CREATE_OPTIONS_INIT;
	kt_list_options lopts = KT_LIST_OPTIONS_INIT;
	kt_setattr_args sa = KT_SETATTR_ARGS_INIT;
	kt_check_options chk = KT_CHECK_OPTIONS_INIT;
	kt_error err = KT_EINVAL;
	const kt_entry *ent = nullptr;
	int (*next_fn)(const kt_entry **, kt_iter *) = kt_iter_next;
	const char *delim = KT_DEFAULT_DELIMITER;

	(void)ent;
	return static_cast<int>(opts.version + copts.version + lopts.version +
				sa.version + chk.version) +
	       static_cast<int>(next_fn != nullptr) + delim[0] + err;
}
