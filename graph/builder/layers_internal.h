// What the layer files (layers.cc, loss_layers.cc) share: their errors and
// the one-input op they append. Not for other users: layers.h is the API.
#pragma once

#include <string>

#include "graph/builder/program_builder.h"

namespace parex::layers::internal {

// InvalidArgument "<layer>: <message>".
Status LayerError(const std::string& layer, const std::string& message);
// `what` (an argument of `layer`) is not null.
Status CheckVar(const std::string& layer, const VarDesc* v, const char* what);
// "'name' [dims]", for messages.
std::string VarText(const VarDesc& v);
// Appends op `type` X -> Out with Out = "<helper>.tmp_<k>" of X's dtype.
StatusOr<VarDesc*> AppendUnary(ProgramBuilder& b, const std::string& helper,
                               const std::string& type, VarDesc* x,
                               const ProgramBuilder::AttrSetter& attrs = {});

}  // namespace parex::layers::internal
