# Third-party packages of the device build: each one that find_package does
# not find (the device image has no Debian development packages) comes from
# CAPPLAN_DEVICE_DEPS, the folder engine/device/bring_deps.sh fills and a
# device run carries. The targets have the names find_package would give, so
# the libraries' CMakeLists.txt need no change.
set(CAPPLAN_DEVICE_DEPS ${CMAKE_CURRENT_LIST_DIR}/deps CACHE PATH
    "third-party folder written by engine/device/bring_deps.sh")

function(capplan_device_deps_missing what)
  message(FATAL_ERROR "${what} was not found and ${CAPPLAN_DEVICE_DEPS} lacks it: run "
                      "engine/device/bring_deps.sh where the package is installed and carry "
                      "engine/device/deps with the run")
endfunction()

find_package(nlohmann_json 3.10 QUIET)
if(NOT nlohmann_json_FOUND)
  if(NOT EXISTS ${CAPPLAN_DEVICE_DEPS}/include/nlohmann/json.hpp)
    capplan_device_deps_missing(nlohmann_json)
  endif()
  add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
  target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE
                             ${CAPPLAN_DEVICE_DEPS}/include)
  message(STATUS "nlohmann_json: carried copy in ${CAPPLAN_DEVICE_DEPS}")
endif()

if(CAPPLAN_STATIC_RUNTIME)
  set(Boost_USE_STATIC_LIBS ON)
endif()
find_package(Boost 1.74 QUIET COMPONENTS program_options)
if(NOT Boost_FOUND)
  if(NOT EXISTS ${CAPPLAN_DEVICE_DEPS}/lib/libboost_program_options.a)
    capplan_device_deps_missing(Boost.Program_options)
  endif()
  add_library(Boost::program_options STATIC IMPORTED)
  set_target_properties(Boost::program_options PROPERTIES
    IMPORTED_LOCATION ${CAPPLAN_DEVICE_DEPS}/lib/libboost_program_options.a)
  target_include_directories(Boost::program_options SYSTEM INTERFACE
                             ${CAPPLAN_DEVICE_DEPS}/include)
  message(STATUS "Boost.Program_options: carried copy in ${CAPPLAN_DEVICE_DEPS}")
endif()

find_package(GTest QUIET)
if(NOT GTest_FOUND)
  if(NOT EXISTS ${CAPPLAN_DEVICE_DEPS}/googletest/CMakeLists.txt)
    capplan_device_deps_missing(GTest)
  endif()
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  add_subdirectory(${CAPPLAN_DEVICE_DEPS}/googletest ${CMAKE_BINARY_DIR}/_deps/googletest
                   EXCLUDE_FROM_ALL)
  foreach(t gtest gtest_main)  # newer GoogleTest defines these aliases itself
    if(NOT TARGET GTest::${t})
      add_library(GTest::${t} ALIAS ${t})
    endif()
  endforeach()
  message(STATUS "GTest: built from the carried sources in ${CAPPLAN_DEVICE_DEPS}")
endif()
