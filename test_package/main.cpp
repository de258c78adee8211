// Conan test_package: proves the packaged headers compile, link and run.
#include <tutti/tutti.hpp>

#include <cstdio>

int main() {
  std::printf("tutti %s\n", tutti::version);
  return 0;
}
