#include "actors/runtime/message_pool.h"

#include <atomic>

namespace parex {

int ThisThreadShard(int num_shards) {
  static std::atomic<int> next{0};
  thread_local const int mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine % num_shards;
}

}  // namespace parex
