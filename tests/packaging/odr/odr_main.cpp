//! @file
//! Two translation units include <tutti/tutti.hpp> and are linked into one program: a definition
//! that is not inline, or an inline one that differs, fails the link or shows two addresses here.
#include <tutti/tutti.hpp>

#include <cstdio>

const char* const* tutti_version_seen_by_a();

int main() {
  if (tutti_version_seen_by_a() != &tutti::version) {
    std::printf("tutti::version has two definitions: one per translation unit\n");
    return 1;
  }
  std::printf("tutti %s: one definition across translation units\n", tutti::version);
  return 0;
}
