# Helpers shared by every CMakeLists.txt of the project.

# Flags for a target of ours: warnings as errors and the target architecture.
function(shardflow_target_flags target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${SHARDFLOW_WARNINGS} ${SHARDFLOW_ARCH_FLAGS}>)
endfunction()

# shardflow_add_component(NAME <name> DIR <dir> [EXCLUDE <regex>] [PUBLIC_DEPS ...] [PRIVATE_DEPS ...])
# One static library per component folder (core, io, comm), built from every .cpp below
# DIR (recursively) except paths matching EXCLUDE. A file holds one concept, so new concepts
# are new files and need no edit here. Headers are installed under include/shardflow/<dir>.
function(shardflow_add_component)
  cmake_parse_arguments(A "" "NAME;DIR;EXCLUDE" "PUBLIC_DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${A_DIR}/*.cpp)
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}
       ${PROJECT_SOURCE_DIR}/${A_DIR}/*.hpp)
  if(A_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "${A_EXCLUDE}")
    list(FILTER headers EXCLUDE REGEX "${A_EXCLUDE}")
  endif()
  if(NOT sources)
    return()  # a component folder with no code yet
  endif()
  add_library(${A_NAME} STATIC ${sources})
  add_library(shardflow::${A_DIR} ALIAS ${A_NAME})
  set_target_properties(${A_NAME} PROPERTIES EXPORT_NAME ${A_DIR})
  target_include_directories(${A_NAME} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/shardflow>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${A_NAME} PUBLIC ${A_PUBLIC_DEPS} PRIVATE ${A_PRIVATE_DEPS})
  shardflow_target_flags(${A_NAME})
  foreach(h ${headers})
    get_filename_component(d ${h} DIRECTORY)
    install(FILES ${PROJECT_SOURCE_DIR}/${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/shardflow/${d})
  endforeach()
  set_property(GLOBAL APPEND PROPERTY SHARDFLOW_EXPORTED_TARGETS ${A_NAME})
endfunction()

# shardflow_add_app(NAME <exe> SOURCES ... DEPS ...): an executable in build/bin.
function(shardflow_add_app)
  cmake_parse_arguments(A "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS})
  shardflow_target_flags(${A_NAME})
  set_property(GLOBAL APPEND PROPERTY SHARDFLOW_EXPORTED_TARGETS ${A_NAME})
endfunction()

# Process-level tests: one CTest entry per MODE of a script run as
#   SCRIPT MODE BIN_DIR SCRATCH/PREFIXMODE -- MPIEXEC
# (tests/support/process_test.sh), passing when the script's last line is "NAME MODE: ok".
#   shardflow_process_tests(NAME train.preemption SCRIPT preemption_runs.sh PREFIX pre_
#                           WITHIN 150 TIMEOUT 170 MODES all peer ...)
function(shardflow_process_tests)
  cmake_parse_arguments(P "" "NAME;SCRIPT;PREFIX;WITHIN;TIMEOUT" "MODES" ${ARGN})
  set(expect ${PROJECT_SOURCE_DIR}/tests/support/expect_run.sh)
  foreach(mode ${P_MODES})
    add_test(NAME ${P_NAME}.${mode}
      COMMAND ${expect} --exit 0 --stdout-contains "^${P_SCRIPT} ${mode}: ok$" --within ${P_WITHIN}
              -- ${CMAKE_CURRENT_SOURCE_DIR}/${P_SCRIPT} ${mode} ${CMAKE_BINARY_DIR}/bin
                 ${CMAKE_CURRENT_BINARY_DIR}/scratch/${P_PREFIX}${mode} -- ${SHARDFLOW_MPIEXEC})
    set_tests_properties(${P_NAME}.${mode} PROPERTIES LABELS "mpi;integration"
      TIMEOUT ${P_TIMEOUT} PROCESSORS 2 ENVIRONMENT "OMPI_MCA_mpi_yield_when_idle=1")
  endforeach()
endfunction()
