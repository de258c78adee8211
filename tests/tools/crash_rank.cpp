// A rank that prints a line through stdio and crashes (abort) before anything flushes stdout, as
// a real rank does when it hits a bug; the others exit 0. Only tutti's logging header is included:
// that is what makes stdout line-buffered under tutti-run (core/log.hpp, TUTTI_LINE_BUFFERED).
#include <tutti/core/log.hpp>

#include <cstdio>
#include <cstdlib>
#include <string_view>

int main() {
  const char* rank = std::getenv("TUTTI_RANK");
  std::printf("last words of rank %s\n", rank ? rank : "?");
  if (rank && std::string_view(rank) == "1") std::abort();
  return 0;
}
