# cmake -DIN=page.html -DOUT=page.c -DNAME=symbol -P embed.cmake
# Writes OUT, a C file defining NAME, the bytes of IN followed by a NUL,
# and NAME_len, their count without the NUL: the status page is compiled
# into the binary, so a node serves it with no files beside it.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR len "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "/* generated from ${IN} by proxy/embed.cmake */\n"
  "#include \"status.h\"\n"
  "const char ${NAME}[] = {\n${bytes}0};\n"
  "const size_t ${NAME}_len = ${len};\n")
