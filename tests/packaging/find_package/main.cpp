// A program that uses tutti, installed (find_package) or built from source (add_subdirectory).
// Built twice: `consumer` with tutti::tutti only, and `consumer_backends` with every optional
// backend found, whose TUTTI_HAVE_* must all be defined.
#include <tutti/tutti.hpp>

#include <cstdio>
#include <string>

int main() {
  std::string backends;
#ifdef TUTTI_HAVE_UCX
  backends += " ucx";
#endif
#ifdef TUTTI_HAVE_NCCL
  backends += " nccl";
#endif
#ifdef TUTTI_HAVE_CUDA
  backends += " cuda";
#endif
#ifdef TUTTI_HAVE_NET
  backends += " net";
#endif
#ifdef TUTTI_HAVE_PMIX
  backends += " pmix";
#endif
#ifdef TUTTI_HAVE_EIGEN
  backends += " eigen";
#endif
#ifdef TUTTI_HAVE_YAML
  backends += " yaml";
#endif
  std::printf("tutti %s; backends:%s\n", tutti::version, backends.empty() ? " none" : backends.c_str());
#ifdef EXPECTED_BACKENDS
  const std::string expected = EXPECTED_BACKENDS;
  if (backends != (expected.empty() ? "" : " " + expected)) {
    std::printf("expected backends: %s\n", expected.c_str());
    return 1;
  }
#endif
  return 0;
}
