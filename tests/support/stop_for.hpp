//! @file stop_for.hpp  A rank alive but stuck, for the stall tests: this process stops itself
//! (SIGSTOP) and a child it forks continues it after `seconds`, so nothing outside the test's own
//! processes is signalled and the stop always ends.
#pragma once
#include <signal.h>
#include <unistd.h>

namespace tutti_test {

inline void stop_for(int seconds) {
  const pid_t self = ::getpid();
  if (::fork() == 0) {
    ::sleep(static_cast<unsigned>(seconds));
    ::kill(self, SIGCONT);
    ::_exit(0);
  }
  ::raise(SIGSTOP);
}

}  // namespace tutti_test
