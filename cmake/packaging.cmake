# Install rules and the Debian package (issue 8). Included at the end of the top-level
# CMakeLists.txt; scripts/package.sh builds cairnd and cairn, then runs `cpack -G DEB`.
#
#   cmake -S . -B build/package -DCAIRN_VERSION=0.2.0 ...   # version, default 0.1.0
#
# Package layout: /usr/bin/{cairnd,cairn}, /lib/systemd/system/cairnd.service,
# /etc/cairn/cairnd.yaml (a conffile), /usr/share/doc/cairn. The maintainer scripts
# (packaging/postinst, prerm, postrm) create the cairn user, /var/lib/cairn and the admin
# password; they do not enable or start the service.
include(GNUInstallDirs)

# CAIRN_VERSION (the top-level CMakeLists.txt) names the package's version too.

# `cpack` and `cmake --install` install what is built; the scripts build first.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

install(TARGETS cairnd cairn RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Absolute destinations: Debian 12 keeps units in /lib/systemd/system and configs in /etc,
# whatever the install prefix.
install(FILES ${PROJECT_SOURCE_DIR}/packaging/cairnd.service DESTINATION /lib/systemd/system)
# The config never overwrites one in place: `cmake --install` on a configured host keeps the
# operator's file (the package stages into an empty DESTDIR, so it always gets it). file(INSTALL)
# puts DESTDIR in front of an absolute destination itself.
install(CODE "
  set(cairn_config \"\$ENV{DESTDIR}/etc/cairn/cairnd.yaml\")
  if(EXISTS \"\${cairn_config}\")
    message(STATUS \"Keeping: \${cairn_config}\")
  else()
    file(INSTALL \"${PROJECT_SOURCE_DIR}/packaging/cairnd.yaml\" DESTINATION /etc/cairn)
  endif()")
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/operations.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/cairn)

# CPack 3.25 does not mark /etc files as conffiles by itself: list them in a control file.
set(CAIRN_DEB_CONFFILES ${PROJECT_BINARY_DIR}/packaging/conffiles)
file(WRITE ${CAIRN_DEB_CONFFILES} "/etc/cairn/cairnd.yaml\n")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cairn)
set(CPACK_PACKAGE_VERSION ${CAIRN_VERSION})
set(CPACK_PACKAGE_CONTACT "cairn developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "clustered database node")
set(CPACK_PACKAGE_DESCRIPTION
    "cairn keeps databases, tables and records in RocksDB on each node and replicates\n\
them to its peers over gRPC, converging without a leader. This package holds the\n\
daemon cairnd (a systemd service, user cairn, data in /var/lib/cairn) and the cairn\n\
command-line client.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)             # cairn_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "cairn developers")
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
find_program(CAIRN_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(CAIRN_DPKG_SHLIBDEPS)
  # dpkg-shlibdeps appends the shared libraries' packages to Depends.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
else()
  # No dpkg-dev (scripts/package.sh installs it): what dpkg-shlibdeps finds on Debian 12.
  # RocksDB is linked statically (Debian's CMake config exports librocksdb.a), hence its
  # compression libraries instead of librocksdb7.8; libssl3 comes with libcpp-httplib0.11.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "adduser, libc6, libstdc++6, libgcc-s1, libabsl20220623, libgrpc++1.51, libgrpc29, \
libprotobuf32, libspdlog1.10, libfmt9, libyaml-cpp0.7, libcpp-httplib0.11, libsnappy1v5, \
liblz4-1, libzstd1, libbz2-1.0, zlib1g")
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/postinst
    ${PROJECT_SOURCE_DIR}/packaging/prerm
    ${PROJECT_SOURCE_DIR}/packaging/postrm
    ${CAIRN_DEB_CONFFILES})
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)   # scripts 0755, conffiles 0644

include(CPack)
