# keytreeLevelDB.cmake - repair Debian's leveldb::leveldb target.
#
# Included after find_package(leveldb), both by keytree's own build and by
# the installed keytreeConfig.cmake, so that users of an installed keytree
# get the same repair.
#
# Debian 12's libleveldb-dev installs a CMake config whose imported target
# lists the bare name "snappy" in INTERFACE_LINK_LIBRARIES, but the package
# does not depend on libsnappy-dev, so every link against leveldb::leveldb
# fails with "cannot find -lsnappy".  libleveldb.so already records its own
# dependency on libsnappy.so.1, so a shared leveldb never needs -lsnappy
# from us: drop the name when the target is shared and no snappy library
# can be found.  A static leveldb, or a system with libsnappy-dev, keeps it.

if(TARGET leveldb::leveldb)
  get_target_property(_kt_leveldb_type leveldb::leveldb TYPE)
  get_target_property(_kt_leveldb_libs leveldb::leveldb
                      INTERFACE_LINK_LIBRARIES)
  if(_kt_leveldb_type STREQUAL "SHARED_LIBRARY" AND
     _kt_leveldb_libs AND "snappy" IN_LIST _kt_leveldb_libs)
    find_library(KT_SNAPPY_LIBRARY NAMES snappy)
    mark_as_advanced(KT_SNAPPY_LIBRARY)
    if(NOT KT_SNAPPY_LIBRARY)
      list(REMOVE_ITEM _kt_leveldb_libs snappy)
      set_property(TARGET leveldb::leveldb
                   PROPERTY INTERFACE_LINK_LIBRARIES "${_kt_leveldb_libs}")
    endif()
  endif()
  unset(_kt_leveldb_type)
  unset(_kt_leveldb_libs)
endif()
