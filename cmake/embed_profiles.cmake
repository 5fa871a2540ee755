# Writes a C++ file holding each profile's JSON text: name -> contents.
# Called with -DOUT=<file.cpp> -DFILES=<a.json|b.json>.
string(REPLACE "|" ";" FILES "${FILES}")
set(body "// Generated from profiles/*.json; do not edit.\n#include <string_view>\n#include <utility>\n#include <vector>\nnamespace interopbench {\nconst std::vector<std::pair<std::string_view, std::string_view>>& builtin_profile_texts() {\n    static const std::vector<std::pair<std::string_view, std::string_view>> k_texts = {\n")
foreach(f IN LISTS FILES)
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} text)
  string(APPEND body "        {\"${name}\", R\"ibjson(${text})ibjson\"},\n")
endforeach()
string(APPEND body "    };\n    return k_texts;\n}\n} // namespace interopbench\n")
file(WRITE ${OUT} "${body}")
