# keytreeTests.cmake - the tests around the library rather than inside it:
# the public header compiled alone, the example program, the shared
# library's exported symbols, and an install used by an outside program.
# Included from the top-level CMakeLists.txt after enable_testing().

set(_kt_src "${CMAKE_CURRENT_SOURCE_DIR}")
set(_kt_include "${_kt_src}/tree/include")

# keytree.h must compile on its own, as strict C99 and as C++11, with no
# warning: users include it from code we do not control.  These run the
# compiler directly so that a broken header fails one named test instead of
# the whole build.
add_test(NAME header_c99
  COMMAND ${CMAKE_C_COMPILER} -std=c99 -pedantic -Werror -Wall -Wextra
          -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wwrite-strings
          -Wvla -I${_kt_include} -c ${_kt_src}/tests/header/c99.c
          -o ${CMAKE_CURRENT_BINARY_DIR}/header_c99.o)
add_test(NAME header_cxx11
  COMMAND ${CMAKE_CXX_COMPILER} -std=c++11 -pedantic -Werror -Wall -Wextra
          -Wshadow -I${_kt_include} -c ${_kt_src}/tests/header/cxx11.cpp
          -o ${CMAKE_CURRENT_BINARY_DIR}/header_cxx11.o)

# The example must run to the end and exit 0.
add_test(NAME example_hello COMMAND kt_example_hello)

# The shared library exports every KT_EXTERN function and nothing else.
add_test(NAME shared_exports
  COMMAND bash ${_kt_src}/tests/install/check-exports.sh
          $<TARGET_FILE:keytree> ${_kt_include}/keytree.h)

# Install into a temporary prefix, then build and run an outside program
# against it with pkg-config and with find_package(keytree).  Sanitized
# libraries need sanitized programs, so the consumer gets the same flags.
if(KT_SANITIZE)
  list(JOIN KT_SANITIZE_FLAGS " " _kt_consumer_flags)
else()
  set(_kt_consumer_flags "")
endif()
add_test(NAME install_consumer
  COMMAND bash ${_kt_src}/tests/install/run.sh
          ${CMAKE_CURRENT_BINARY_DIR} ${_kt_src} ${PROJECT_VERSION})
set_tests_properties(install_consumer PROPERTIES
  ENVIRONMENT
  "CMAKE_COMMAND=${CMAKE_COMMAND};CC=${CMAKE_C_COMPILER};KT_CONSUMER_FLAGS=${_kt_consumer_flags}"
  TIMEOUT 600)

set_tests_properties(header_c99 header_cxx11 example_hello shared_exports
                     install_consumer PROPERTIES LABELS unit)
