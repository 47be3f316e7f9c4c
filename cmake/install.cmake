# What `cmake --install` puts where, besides the library (top CMakeLists.txt): the idem
# binary, its man page, the documentation, an example config and the systemd unit. Two
# components: `runtime` (the gateway, the idem .deb) and `dev` (libidem, its headers and
# CMake package, the idem-dev .deb).

install(TARGETS idem_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

# idem(1), compressed as Debian ships man pages (man reads either); -n keeps no time
# stamp, so the same page gives the same bytes.
find_program(IDEM_GZIP gzip REQUIRED)
configure_file(docs/man/idem.1 ${PROJECT_BINARY_DIR}/man/idem.1 @ONLY)  # the version
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/man/idem.1.gz
  COMMAND ${IDEM_GZIP} -9n -c ${PROJECT_BINARY_DIR}/man/idem.1 > ${PROJECT_BINARY_DIR}/man/idem.1.gz
  DEPENDS ${PROJECT_BINARY_DIR}/man/idem.1
  COMMENT "Compressing idem.1")
add_custom_target(idem_man ALL DEPENDS ${PROJECT_BINARY_DIR}/man/idem.1.gz)
install(FILES ${PROJECT_BINARY_DIR}/man/idem.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT runtime)

set(IDEM_DOCDIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/idem)
install(FILES README.md LICENSE deploy/copyright DESTINATION ${IDEM_DOCDIR} COMPONENT runtime)
file(GLOB IDEM_DOCS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${IDEM_DOCS} DESTINATION ${IDEM_DOCDIR}/docs COMPONENT runtime)
install(DIRECTORY docs/img DESTINATION ${IDEM_DOCDIR}/docs COMPONENT runtime)  # performance.md's plots
install(FILES deploy/copyright DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/idem-dev COMPONENT dev)

# The config and the unit belong where the system looks for them: /etc/idem and
# /lib/systemd/system when installed under /usr (the .deb; GNUInstallDirs reads /usr so
# too), under the prefix otherwise (cmake --install --prefix /opt/idem gives
# /opt/idem/etc/idem). Decided when installing, so one build serves both.
function(idem_install_system_file file usr_dir prefix_dir)
  install(
    CODE "
    if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
      set(_idem_dir \"${usr_dir}\")
    else()
      set(_idem_dir \"\${CMAKE_INSTALL_PREFIX}/${prefix_dir}\")
    endif()
    file(INSTALL DESTINATION \"\${_idem_dir}\" TYPE FILE FILES \"${PROJECT_SOURCE_DIR}/${file}\")"
    COMPONENT runtime)
endfunction()
idem_install_system_file(deploy/idem.yaml /etc/idem ${CMAKE_INSTALL_SYSCONFDIR}/idem)
idem_install_system_file(deploy/idem.service /lib/systemd/system lib/systemd/system)
