# Turn docs/openapi.json into a C file at build time (cmake -P):
#   -DIN=<json> -DOUT=<c file>
# The JSON is checked to parse (string(JSON)) so a broken document fails
# the build rather than being served.
file(READ "${IN}" text)
string(JSON version ERROR_VARIABLE jerr GET "${text}" openapi)
if(jerr)
  message(FATAL_ERROR "${IN} is not valid JSON: ${jerr}")
endif()
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUT}.tmp"
  "/* generated from docs/openapi.json by http/embed_openapi.cmake */\n"
  "#include <stddef.h>\n"
  "const char sv_openapi_json[] = {${bytes}0x00};\n"
  "const size_t sv_openapi_json_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
