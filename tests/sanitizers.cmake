# AddressSanitizer + UndefinedBehaviorSanitizer over the unit and conformance tests (label `asan`;
# tests named asan.<folder>.<...>, the same filters as the plain ones), and ThreadSanitizer over
# the tests that run threads (label `tsan`, tests tsan.<folder>.<...>).
#
# Building every folder a second time does not fit CI's 25 minutes on two cores, so by default a
# configure builds one group of folders, chosen by rotation: group (commits on HEAD) mod (number of
# groups). Consecutive commits on main cover every group in turn; the group in force is printed at
# configure time and in docs/reliability.md's terms. TUTTI_SANITIZE=all builds every group (a
# longer local run), =none none, or a semicolon list of group numbers (0-based) picks those.
# A finding fails the test: halt_on_error for both, no recovery from UBSan, leaks detected.
set(TUTTI_SANITIZE "rotation" CACHE STRING "sanitized test folders: rotation, all, none, or group numbers")

# Groups of similar cost: each adds about 1.5 to 3 minutes of one core's compile time (-O1 -g1,
# measured on the 2-core VM: tests/trainer/trainer_test.cpp alone takes 55 s) and under a minute of
# run time; algorithm's conformance suites one source at a time, fusion's and transport's sources
# in two groups each, tuned's in two, core with codec apart from tuner. A full cycle is 24 commits.
set(tutti_sanitize_group_0 "core/*.cpp;codec/*.cpp")
set(tutti_sanitize_group_1 "bootstrap/*.cpp")
set(tutti_sanitize_group_2 "trainer/*.cpp")
set(tutti_sanitize_group_3 "communicator/*.cpp")
set(tutti_sanitize_group_4 "fusion/engine_test.cpp;fusion/engine_processes_test.cpp;fusion/buffer_test.cpp")
set(tutti_sanitize_group_5 "transport/inproc_test.cpp;transport/shm_test.cpp;transport/shm_registered_test.cpp;transport/shm_mismatch_test.cpp")
set(tutti_sanitize_group_6 "algorithm/ring_test.cpp")
set(tutti_sanitize_group_7 "algorithm/direct_test.cpp")
set(tutti_sanitize_group_8 "algorithm/eager_test.cpp")
set(tutti_sanitize_group_9 "algorithm/tree_test.cpp")
set(tutti_sanitize_group_10 "algorithm/halving_doubling_test.cpp")
set(tutti_sanitize_group_11 "algorithm/hierarchical_test.cpp")
set(tutti_sanitize_group_12 "algorithm/automatic_test.cpp")
set(tutti_sanitize_group_13 "algorithm/tuned_test.cpp")
set(tutti_sanitize_group_14 "algorithm/tuning_test.cpp")
set(tutti_sanitize_group_15 "algorithm/composition_test.cpp")
# ThreadSanitizer ("thread|" first) over the tests whose ranks or servers are threads of one process:
# the store's server and clients, the inproc transport and UCX's progress, the trainer over
# threads, the communicator's stall inspector beside its collectives. (The fusion engine has its
# own TSan test in every run: tests/fusion/CMakeLists.txt.)
set(tutti_sanitize_group_16 "thread|bootstrap/store_test.cpp;bootstrap/tcp_store_test.cpp")
# (transport/ucx_test.cpp under TSan passes but takes 330 s of CPU: run it with TUTTI_SANITIZE=24.)
set(tutti_sanitize_group_17 "thread|transport/inproc_test.cpp")
set(tutti_sanitize_group_18 "thread|trainer/trainer_test.cpp")
set(tutti_sanitize_group_19 "thread|communicator/stall_test.cpp;communicator/composition_test.cpp")
set(tutti_sanitize_group_20 "fusion/autotuned_test.cpp;fusion/bayesian_optimizer_test.cpp;fusion/joint_test.cpp;fusion/joint_engine_test.cpp")
set(tutti_sanitize_group_21 "transport/node_aware_test.cpp;transport/ucx_test.cpp")
# tuned's suites over processes, apart from group 13's (threads, simulated nodes): together they
# were the heaviest group by far (a CI run of 27.9 minutes, against 21.6 with a light group).
set(tutti_sanitize_group_22 "algorithm/tuned_processes_test.cpp")
# tuner's sources, apart from core's and codec's: the three together made the heaviest build of the
# rotation (a CI build of 696 s against 550-580 s with the other groups, 2026-11-28).
set(tutti_sanitize_group_23 "tuner/*.cpp")
set(tutti_sanitize_group_24 "thread|transport/ucx_test.cpp")  # outside the rotation: see group 17
set(tutti_sanitize_groups 24)

if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" OR TUTTI_SANITIZE STREQUAL "none")
  return()
endif()
if(TUTTI_SANITIZE STREQUAL "rotation")
  execute_process(COMMAND git rev-list --count HEAD WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
                  OUTPUT_VARIABLE commits RESULT_VARIABLE git_failed OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(git_failed OR NOT commits MATCHES "^[0-9]+$")
    set(commits 0)  # not a git checkout (a source archive): the first group
  endif()
  math(EXPR chosen "${commits} % ${tutti_sanitize_groups}")
elseif(TUTTI_SANITIZE STREQUAL "all")
  math(EXPR last "${tutti_sanitize_groups} - 1")
  set(chosen "")
  foreach(g RANGE ${last})
    list(APPEND chosen ${g})
  endforeach()
else()
  set(chosen "${TUTTI_SANITIZE}")
endif()

foreach(group IN LISTS chosen)
  if(NOT DEFINED tutti_sanitize_group_${group})
    message(FATAL_ERROR "TUTTI_SANITIZE: no sanitizer group ${group} (groups 0 to ${tutti_sanitize_groups})")
  endif()
  set(patterns "${tutti_sanitize_group_${group}}")
  if(patterns MATCHES "^thread[|]")
    string(REGEX REPLACE "^thread[|]" "" patterns "${patterns}")
    set(kind tsan)
    set(sanitizers thread)
    set(tutti_sanitize_flags -fsanitize=thread -O1 -g1)
  else()
    set(kind asan)
    set(sanitizers address,undefined)
    set(tutti_sanitize_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -g1)
  endif()
  message(STATUS "tutti: sanitizer group ${group} (${kind}): ${patterns}")
  # One executable per folder of the group, with the plain executable's libraries.
  set(folders "")
  foreach(pattern IN LISTS patterns)
    string(REGEX REPLACE "/.*" "" folder "${pattern}")
    if(NOT folder IN_LIST folders)
      set(sources_${folder} "")  # an earlier group's sources of this folder are not this group's
    endif()
    file(GLOB matched CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/${pattern}")
    list(APPEND sources_${folder} ${matched})
    list(APPEND folders ${folder})
  endforeach()
  list(REMOVE_DUPLICATES folders)
  foreach(folder IN LISTS folders)
    if(NOT TARGET tutti_${folder}_tests)
      continue()
    endif()
    set(exe tutti_${folder}_${kind}${group}_tests)
    get_target_property(libs tutti_${folder}_tests LINK_LIBRARIES)
    list(REMOVE_ITEM libs tutti_doctest_main)
    add_executable(${exe} ${sources_${folder}} main.cpp)
    target_link_libraries(${exe} PRIVATE ${libs} doctest::doctest tutti_dev_options)
    target_include_directories(${exe} PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
    target_compile_options(${exe} PRIVATE ${tutti_sanitize_flags})
    # GCC 12's -Wmaybe-uninitialized misfires inside <regex> and <functional> once instrumented.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${exe} PRIVATE -Wno-maybe-uninitialized)
    endif()
    target_link_options(${exe} PRIVATE -fsanitize=${sanitizers})
    foreach(source IN LISTS sources_${folder})
      tutti_add_source_tests(${folder} ${exe} "${source}" ${kind})
    endforeach()
  endforeach()
endforeach()

get_property(registered DIRECTORY PROPERTY TESTS)
foreach(t IN LISTS registered)
  if(t MATCHES "^asan[.]")
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
                 "ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0"
                 "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
    set_property(TEST ${t} APPEND PROPERTY FAIL_REGULAR_EXPRESSION "AddressSanitizer;runtime error:;LeakSanitizer")
  elseif(t MATCHES "^tsan[.]")
    # UCX_MEM_EVENTS=no: UCX's memory hooks (libucm patches mmap and brk when libucs loads) crash a
    # ThreadSanitizer process before main; tutti registers no memory with UCX, so it needs none.
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1"
                 "UCX_MEM_EVENTS=no")
    set_property(TEST ${t} APPEND PROPERTY FAIL_REGULAR_EXPRESSION "ThreadSanitizer")
  endif()
endforeach()
