# Warning flags for capplan's own C++ code, shared by the main project and the
# device build (engine/device/kernels_only). Generator expressions restrict
# them to the CXX language: nvcc (CUDA) compiles are left alone, and
# third-party code (nlohmann_json, Boost, GoogleTest, Google Benchmark, Eigen)
# comes in prebuilt or as headers from system include directories, where GCC
# reports no warnings.
#
#   -Wno-array-bounds      GCC 12 false positives inside libstdc++'s map code
#                          instantiated by nlohmann::json, reported at
#                          libstdc++ lines.
#   -Wno-restrict          GCC 12 only: a false positive in libstdc++'s
#                          std::string operator+ once inlined ("accessing
#                          9223372036854775810 or more bytes"), GCC bug
#                          https://gcc.gnu.org/bugzilla/show_bug.cgi?id=105329.
#
# CAPPLAN_WERROR=ON adds -Werror to the same flags; `make test` configures with
# it, so a new warning fails CI.
option(CAPPLAN_WERROR "Treat compiler warnings in capplan's own C++ code as errors" OFF)
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wall> $<$<COMPILE_LANGUAGE:CXX>:-Wextra>
                    $<$<COMPILE_LANGUAGE:CXX>:-Wno-array-bounds>)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
   AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()
if(CAPPLAN_WERROR)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
