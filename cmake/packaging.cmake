# The .deb packages, built by CPack from an ordinary build (scripts/package):
#   idem      the gateway: /usr/bin/idem, idem(1), /etc/idem/idem.yaml (a conffile), the
#             systemd unit, /usr/share/doc/idem; its maintainer scripts (deploy/debian/)
#             make the user idem and /var/lib/idem.
#   idem-dev  libidem (static), its headers and CMake package (find_package(idem)).
# Two packages because a server that runs the gateway needs neither a static library nor
# the -dev packages of Boost, OpenSSL, SQLite, hiredis, libpq and libmariadb that find_package(idem)
# asks for, while a program linking libidem needs no service, user or open port.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME idem)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the idem authors")
set(CPACK_PACKAGE_CONTACT "idem maintainers <idem@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "idempotency gateway: a retried request runs once")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
# The packaging prefix is /usr, and the install rules give /etc and /lib/systemd/system
# for it (cmake/install.cmake): they must see that prefix, and the staging directory as
# DESTDIR.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)  # the prefix CPack installs with when it sets DESTDIR
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # idem_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME idem)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)  # Depends: from dpkg-shlibdeps
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "adduser")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "A reverse proxy (idem serve) in front of an HTTP service that makes retried POSTs safe:\n\
a request with an Idempotency-Key (or a one-time token, or a key built from the request)\n\
runs once, and its repeats get the stored response. Records live in SQLite, Redis,\n\
Redis Cluster or PostgreSQL. Runs as the systemd service idem.")
# dpkg marks only the files listed in conffiles as configuration, kept on upgrades.
file(WRITE ${PROJECT_BINARY_DIR}/deb/conffiles "/etc/idem/idem.yaml\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/deb/conffiles ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME idem-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libboost1.81-dev, libssl-dev, libsqlite3-dev, libxxhash-dev, libhiredis-dev, libpq-dev, libmariadb-dev, pkg-config"
)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "libidem: the idempotency engine of idem for C++20 programs (Asio and blocking), as a\n\
static library with its headers and CMake package: find_package(idem), idem::idem.")

include(CPack)
