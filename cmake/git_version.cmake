# Writes the version source with the git revision of the tree being built, at every build
# (a dirty tree is marked "-dirty"). configure_file leaves the file untouched when the text
# is the same, so an unchanged revision rebuilds nothing.
# Called with -DSRC=<version.cpp.in> -DOUT=<version.cpp> -DDIR=<source dir> -DPROJECT_VERSION=<x.y.z>.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${DIR}
                OUTPUT_VARIABLE INTEROPBENCH_GIT_SHA OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT INTEROPBENCH_GIT_SHA)
  set(INTEROPBENCH_GIT_SHA unknown)
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${DIR}
                  OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    string(APPEND INTEROPBENCH_GIT_SHA "-dirty")
  endif()
endif()
configure_file(${SRC} ${OUT} @ONLY)
