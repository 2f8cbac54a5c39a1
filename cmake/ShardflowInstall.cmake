# `cmake --install` puts headers, libraries and executables under the prefix and exports a
# CMake package, so a downstream project can `find_package(shardflow)` and link
# shardflow::core, shardflow::io, shardflow::comm.
include(CMakePackageConfigHelpers)
get_property(exported GLOBAL PROPERTY SHARDFLOW_EXPORTED_TARGETS)
install(TARGETS ${exported} EXPORT shardflowTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT shardflowTargets NAMESPACE shardflow::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardflow)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/shardflowConfig.cmake.in
  ${PROJECT_BINARY_DIR}/shardflowConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardflow)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/shardflowConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/shardflowConfig.cmake
  ${PROJECT_BINARY_DIR}/shardflowConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/shardflow)
