# install(): headers + a CMake package so that find_package(tenfold CONFIG) works against the prefix.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tenfold EXPORT tenfoldTargets)
install(EXPORT tenfoldTargets NAMESPACE tenfold:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tenfold)
configure_package_config_file(cmake/tenfoldConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/tenfoldConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tenfold)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tenfoldConfigVersion.cmake COMPATIBILITY SameMajorVersion
                                 ARCH_INDEPENDENT)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tenfoldConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/tenfoldConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tenfold)
