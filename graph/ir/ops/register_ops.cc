#include "graph/ir/ops/op_groups.h"

namespace parex {

void RegisterAllOpSchemas(OpSchemaRegistry* r) {
  RegisterIoOps(r);
  RegisterFillOps(r);
  RegisterElementwiseOps(r);
  RegisterActivationOps(r);
  RegisterSoftmaxOps(r);
  RegisterReduceOps(r);
  RegisterMetricOps(r);
  RegisterOptimizerOps(r);
  RegisterMatmulOps(r);
  RegisterConvOps(r);
  RegisterNormOps(r);
  RegisterShapeOps(r);
  RegisterLookupTableOps(r);
  RegisterMathOps(r);
  RegisterTensorOps(r);
  RegisterConvTransposeOps(r);
  RegisterPadOps(r);
  RegisterInterpOps(r);
  RegisterLayoutOps(r);
  RegisterGroupNormOps(r);
  RegisterArrayOps(r);
  RegisterControlFlowOps(r);
}

}  // namespace parex
