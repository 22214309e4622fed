// Two threads write one int with nothing ordering them. Built only with
// PAREX_TSAN: ctest's tsan_detects_a_race expects ThreadSanitizer to report
// it, so a TSan stage that stopped instrumenting (or lost its reports) fails
// instead of passing clean.
//
// The shape matters (clang 14's TSan v3, measured here): the other thread
// writes once and stays alive while this one writes 20 ms later: 40/40
// runs reported, idle or under load. Two threads writing one global in
// tight loops for 200 ms went unreported in 2 runs of 30 idle and in 3 of
// 4 under load.
#include <unistd.h>

#include <memory>
#include <thread>

int main() {
  auto shared = std::make_unique<int>(0);
  int* p = shared.get();
  std::thread other([p] {
    *p = 1;
    usleep(100000);
  });
  usleep(20000);
  *p = 2;
  other.join();
  return 0;
}
