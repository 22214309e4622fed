#include "graph/memory_plan.h"

namespace parex {

Status PlanMemory(SsaGraph*, int64_t) { return Unimplemented("PlanMemory"); }
Status CheckMemoryPlan(const SsaGraph&) { return Unimplemented("CheckMemoryPlan"); }

}  // namespace parex
