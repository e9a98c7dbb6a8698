# `cmake --install` of the C++ package: the headers, the static libraries, the catalog under
# share/capplan/models, and a CMake package exporting capplan::capplan, so that a C++ program can
# find_package(capplan) and link it.
include(CMakePackageConfigHelpers)

# The one target consumers link: the core and the device queries (CUDA or the stub).
add_library(capplan INTERFACE)
target_link_libraries(capplan INTERFACE capplan_core capplan_device)

set(_targets capplan capplan_core capplan_device)
if(CAPPLAN_HAS_CUDA)
  list(APPEND _targets capplan_cuda)  # static: the device library's link-time dependency
endif()
set(CAPPLAN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/capplan)
install(TARGETS ${_targets} EXPORT capplanTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/capplan DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY models/ DESTINATION ${CMAKE_INSTALL_DATADIR}/capplan/models)
install(EXPORT capplanTargets NAMESPACE capplan:: DESTINATION ${CAPPLAN_INSTALL_CMAKEDIR})

configure_package_config_file(cmake/capplanConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/capplanConfig.cmake
                              INSTALL_DESTINATION ${CAPPLAN_INSTALL_CMAKEDIR}
                              PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/capplanConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/capplanConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/capplanConfigVersion.cmake
        DESTINATION ${CAPPLAN_INSTALL_CMAKEDIR})
