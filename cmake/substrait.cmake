# substrait.cmake — the Substrait protos, fetched at configure time from a
# pinned registry artifact (Maven Central io.substrait:core, which ships
# substrait/*.proto), made palatable to protoc-c and compiled into the build
# tree. Nothing of this is vendored or generated in git.
#
# protoc-c 1.4.1 (and upstream protobuf-c to date, issue #476) refuses proto3
# `optional`. The protos have exactly two such fields; each is rewritten as a
# one-member oneof named `_<field>`, which is what protoc itself lowers proto3
# optional to: same wire format, same JSON name, and presence kept (the oneof
# case is NOT_SET when the field is absent). A third `optional` makes the
# configure fail loudly rather than compile into something else.
#
# google/protobuf/{any,empty}.proto come from Debian's libprotobuf-dev.

set(SV_SUBSTRAIT_ARTIFACT "io.substrait:core:0.89.1" CACHE STRING
  "Maven artifact that ships the Substrait protos (spec 0.87.0)")
set(SV_SUBSTRAIT_DL ${CMAKE_BINARY_DIR}/substrait-dl)
set(SV_SUBSTRAIT_SRC ${CMAKE_BINARY_DIR}/substrait-proto)
set(SV_SUBSTRAIT_GEN ${CMAKE_BINARY_DIR}/gen)

find_program(SV_MVN NAMES mvn REQUIRED)
find_path(SV_PROTOBUF_INCLUDE google/protobuf/any.proto
  PATHS /usr/include /usr/local/include
  DOC "google/protobuf/any.proto (Debian libprotobuf-dev)")
if(NOT SV_PROTOBUF_INCLUDE)
  message(FATAL_ERROR "google/protobuf/any.proto not found: install "
    "libprotobuf-dev (deploy/install-deps.sh)")
endif()

string(REPLACE ":" ";" _art "${SV_SUBSTRAIT_ARTIFACT}")
list(GET _art 1 _art_id)
list(GET _art 2 _art_ver)
set(_jar ${SV_SUBSTRAIT_DL}/${_art_id}-${_art_ver}.jar)
if(NOT EXISTS ${_jar})
  message(STATUS "substrait: fetching ${SV_SUBSTRAIT_ARTIFACT} (Maven)")
  execute_process(
    COMMAND ${SV_MVN} -q -B dependency:copy
            -Dartifact=${SV_SUBSTRAIT_ARTIFACT}
            -DoutputDirectory=${SV_SUBSTRAIT_DL}
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0 OR NOT EXISTS ${_jar})
    message(FATAL_ERROR "substrait: mvn could not fetch "
      "${SV_SUBSTRAIT_ARTIFACT}:\n${_out}")
  endif()
endif()

set(SV_SUBSTRAIT_PROTOS substrait/plan.proto substrait/algebra.proto
  substrait/type.proto substrait/extensions/extensions.proto)
set(_stamp ${SV_SUBSTRAIT_SRC}/.from-${_art_id}-${_art_ver})
if(NOT EXISTS ${_stamp})
  file(REMOVE_RECURSE ${SV_SUBSTRAIT_DL}/x ${SV_SUBSTRAIT_SRC})
  file(MAKE_DIRECTORY ${SV_SUBSTRAIT_DL}/x)
  execute_process(COMMAND ${CMAKE_COMMAND} -E tar xf ${_jar}
    WORKING_DIRECTORY ${SV_SUBSTRAIT_DL}/x RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "substrait: cannot unpack ${_jar}")
  endif()
  set(_rewrites 0)
  foreach(p ${SV_SUBSTRAIT_PROTOS})
    file(READ ${SV_SUBSTRAIT_DL}/x/${p} _text)
    # `optional <type> <name> = <n>;` -> `oneof _<name> { <type> <name> = <n>; }`
    # (counted without the `;`, which CMake would read as a list separator)
    string(REGEX MATCHALL "\n[ \t]*optional [A-Za-z0-9_.]+ [A-Za-z0-9_]+ = [0-9]+"
      _opts "${_text}")
    list(LENGTH _opts _n)
    math(EXPR _rewrites "${_rewrites} + ${_n}")
    string(REGEX REPLACE
      "\n([ \t]*)optional ([A-Za-z0-9_.]+) ([A-Za-z0-9_]+) = ([0-9]+);"
      "\n\\1oneof _\\3 { \\2 \\3 = \\4; }" _text "${_text}")
    file(WRITE ${SV_SUBSTRAIT_SRC}/${p} "${_text}")
  endforeach()
  if(NOT _rewrites EQUAL 2)
    message(FATAL_ERROR "substrait: expected 2 proto3 optional fields to "
      "rewrite, found ${_rewrites}: check the new protos")
  endif()
  file(WRITE ${_stamp} "${SV_SUBSTRAIT_ARTIFACT}\n")
endif()

set(SV_SUBSTRAIT_SRCS)
foreach(p ${SV_SUBSTRAIT_PROTOS})
  string(REGEX REPLACE "\\.proto$" "" n ${p})
  set(c ${SV_SUBSTRAIT_GEN}/${n}.pb-c.c)
  set(h ${SV_SUBSTRAIT_GEN}/${n}.pb-c.h)
  add_custom_command(OUTPUT ${c} ${h}
    COMMAND ${PROTOC_C} --c_out=${SV_SUBSTRAIT_GEN} -I${SV_SUBSTRAIT_SRC}
            -I${SV_PROTOBUF_INCLUDE} ${SV_SUBSTRAIT_SRC}/${p}
    DEPENDS ${SV_SUBSTRAIT_SRC}/${p} COMMENT "protoc-c ${p}" VERBATIM)
  list(APPEND SV_SUBSTRAIT_SRCS ${c})
endforeach()
foreach(n any empty)
  set(c ${SV_SUBSTRAIT_GEN}/google/protobuf/${n}.pb-c.c)
  add_custom_command(OUTPUT ${c} ${SV_SUBSTRAIT_GEN}/google/protobuf/${n}.pb-c.h
    COMMAND ${PROTOC_C} --c_out=${SV_SUBSTRAIT_GEN} -I${SV_PROTOBUF_INCLUDE}
            ${SV_PROTOBUF_INCLUDE}/google/protobuf/${n}.proto
    COMMENT "protoc-c google/protobuf/${n}.proto" VERBATIM)
  list(APPEND SV_SUBSTRAIT_SRCS ${c})
endforeach()
add_library(svsubstraitproto STATIC ${SV_SUBSTRAIT_SRCS})
target_include_directories(svsubstraitproto PUBLIC ${SV_SUBSTRAIT_GEN})
target_link_libraries(svsubstraitproto PUBLIC PkgConfig::PROTOBUFC)
