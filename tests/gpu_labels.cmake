# Read by CTest after the test list that doctest_discover_tests wrote (tests/CMakeLists.txt):
# the cases named "gpu scenario: FAMILY" get the label `gpu`, so that `ctest -L gpu` runs one
# small configuration of every GPU scenario (and `ctest -LE gpu` leaves them out). A case
# takes seconds on a GPU machine; the timeout is a guard against a hang, not a timing check.
# Long cases get a COST, so that a parallel run starts them first.
foreach(test IN LISTS interopbench_tests_TESTS)
  if(test MATCHES "^gpu scenario: ")
    set_tests_properties("${test}" PROPERTIES LABELS gpu TIMEOUT 300)
  elseif(test MATCHES "^plugin: misbehaviour at run time")
    # The longest case (about 20 s): started first under ctest -j.
    set_tests_properties("${test}" PROPERTIES COST 20)
  endif()
endforeach()
