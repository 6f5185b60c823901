# Sanitizer and fuzzing builds (tests/fuzz/README.md). Both are separate
# build folders, CUDA off:
#   CAPPLAN_SANITIZE=ON  AddressSanitizer + UndefinedBehaviorSanitizer on all
#                        code; any report aborts (make test-sanitize).
#   CAPPLAN_FUZZ=ON      implies CAPPLAN_SANITIZE and adds libFuzzer coverage
#                        instrumentation and the fuzz_<target> binaries; needs
#                        clang (make fuzz).
option(CAPPLAN_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(CAPPLAN_FUZZ "Build the libFuzzer targets in tests/fuzz (clang)" OFF)
if(CAPPLAN_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "CAPPLAN_FUZZ needs clang (CXX=clang++-14), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  set(CAPPLAN_SANITIZE ON)
endif()
if(CAPPLAN_SANITIZE)
  # -fno-sanitize-recover: an UndefinedBehaviorSanitizer report aborts the
  # test like an AddressSanitizer one, instead of printing and going on.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
endif()
if(CAPPLAN_FUZZ)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
