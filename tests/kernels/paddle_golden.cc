#include "tests/kernels/paddle_golden.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <vector>

#include "graph/ir/op_schema.h"
#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

using Json = nlohmann::json;

// The parsed golden file `name` of tests/kernels/paddle_goldens/ (read once;
// tests run on one thread).
const Json& Goldens(const std::string& name) {
  static std::map<std::string, Json> docs;
  auto it = docs.find(name);
  if (it == docs.end()) {
    std::ifstream file(std::string(PAREX_SOURCE_DIR) +
                       "/tests/kernels/paddle_goldens/" + name);
    PAREX_CHECK(file.good(), name + " is missing");
    it = docs.emplace(name, Json::parse(file)).first;
  }
  return it->second;
}

DType DTypeFromName(const std::string& name) {
  if (name == "float64") return DType::kFP64;
  if (name == "float32") return DType::kFP32;
  if (name == "int64") return DType::kInt64;
  if (name == "int32") return DType::kInt32;
  if (name == "bool") return DType::kBool;
  ADD_FAILURE() << "unknown dtype " << name;
  return DType::kUndefined;
}

// A JSON value: a number, a bool, null (NaN) or "inf" / "-inf".
double Number(const Json& v) {
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (v.is_string()) {
    return (v.get<std::string>() == "inf" ? 1 : -1) *
           std::numeric_limits<double>::infinity();
  }
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return v.get<double>();
}

Tensor MakeGoldenTensor(DType dtype, const Dims& dims, const Json& values) {
  Tensor t(dtype, dims);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(values.size());
       ++i) {
    const Json& v = values[i];
    switch (dtype) {
      case DType::kFP64:
        t.data<double>()[i] = Number(v);
        break;
      case DType::kFP32:
        t.data<float>()[i] = static_cast<float>(Number(v));
        break;
      case DType::kInt64:
        t.data<int64_t>()[i] = v.get<int64_t>();
        break;
      case DType::kInt32:
        t.data<int32_t>()[i] = v.get<int32_t>();
        break;
      case DType::kBool:
        t.data<bool>()[i] = v.get<bool>();
        break;
      default:
        ADD_FAILURE() << "unsupported dtype";
        break;
    }
  }
  return t;
}

Tensor TensorOf(const Json& entry) {
  return MakeGoldenTensor(DTypeFromName(entry["dtype"]),
                          entry["dims"].get<Dims>(), entry["values"]);
}

double Element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFP64:
      return t.data<double>()[i];
    case DType::kFP32:
      return t.data<float>()[i];
    case DType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kInt32:
      return t.data<int32_t>()[i];
    case DType::kBool:
      return t.data<bool>()[i];
    default:
      ADD_FAILURE() << "unsupported dtype";
      return 0;
  }
}

// "" or the first element of `actual` that differs from `want` (NaN matches
// NaN, infinities match themselves).
std::string Compare(const Tensor& actual, const Json& want, double tol) {
  if (actual.numel() != static_cast<int64_t>(want.size())) {
    return std::to_string(actual.numel()) + " elements, Paddle has " +
           std::to_string(want.size());
  }
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = Element(actual, i), e = Number(want[i]);
    const bool same = std::isnan(e) ? std::isnan(a)
                      : std::isinf(e)
                          ? a == e
                          : std::abs(a - e) <= tol + tol * std::abs(e);
    if (!same) {
      std::ostringstream m;
      m.precision(17);
      m << "element " << i << ": " << a << ", Paddle " << e;
      return m.str();
    }
  }
  return "";
}

void SetAttrs(OpTester& t, const Json& attrs) {
  for (const auto& [name, v] : attrs.items()) {
    if (v.is_boolean()) {
      t.Attr<bool>(name, v.get<bool>());
    } else if (v.is_number_integer()) {
      t.Attr<int>(name, v.get<int>());
    } else if (v.is_number_float()) {
      t.Attr<float>(name, v.get<float>());
    } else if (v.is_string()) {
      t.Attr<std::string>(name, v.get<std::string>());
    } else if (v.is_array() && !v.empty() && v[0].is_number_float()) {
      t.Attr<std::vector<float>>(name, v.get<std::vector<float>>());
    } else if (v.is_array()) {
      t.Attr<std::vector<int>>(name, v.get<std::vector<int>>());
    } else {
      ADD_FAILURE() << "attribute " << name << " has an unknown type";
    }
  }
}

double Tolerance(DType dtype, GoldenTolerance tol) {
  return dtype == DType::kFP32   ? tol.fp32
         : dtype == DType::kFP64 ? tol.fp64
                                 : 0;
}

std::set<std::string> AsSet(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

// The gradient op of the case's forward op, fed as make_goldens.py fed
// Paddle's: forward inputs and outputs by slot, Out@GRAD = w in the output's
// dtype.
void CheckGradient(const Json& c, const OpSchema& schema, OpTester& forward,
                   GoldenTolerance tol) {
  ASSERT_TRUE(c.contains("grad_op"));
  const Json& paddle_grad = c["grad_op"];
  EXPECT_EQ(schema.grad_type(), paddle_grad["type"].get<std::string>());
  EXPECT_EQ(AsSet(schema.grad_inputs()),
            paddle_grad["inputs"].get<std::set<std::string>>());
  EXPECT_EQ(AsSet(schema.grad_outputs()),
            paddle_grad["outputs"].get<std::set<std::string>>());
  OpTester g(schema.grad_type());
  for (const std::string& entry : schema.grad_inputs()) {
    const size_t at = entry.find(kGradSuffix);
    if (at != std::string::npos) {
      const std::string slot = entry.substr(0, at);
      std::vector<Tensor> ws;
      for (size_t k = 0; k < c["w"][slot].size(); ++k) {
        const Tensor& out = forward.Out(slot, static_cast<int>(k));
        ws.push_back(
            MakeGoldenTensor(out.dtype(), out.dims(), c["w"][slot][k]));
      }
      g.Inputs(entry, std::move(ws));
    } else if (c["inputs"].contains(entry)) {
      std::vector<Tensor> ins;
      for (const Json& in : c["inputs"][entry]) ins.push_back(TensorOf(in));
      g.Inputs(entry, std::move(ins));
    } else if (c["outputs"].contains(entry)) {
      std::vector<Tensor> outs;
      for (size_t k = 0; k < c["outputs"][entry].size(); ++k) {
        outs.push_back(forward.Out(entry, static_cast<int>(k)));
      }
      g.Inputs(entry, std::move(outs));
    } else if (entry == "XShape") {  // written, never fetched (no values)
      g.Inputs(entry, {forward.Out(entry)});
    }
  }
  for (const auto& [slot, by_index] : c["grads"].items()) {
    g.Output(slot + std::string(kGradSuffix),
             static_cast<int>(c["inputs"][slot].size()));
  }
  SetAttrs(g, c["attrs"]);
  const Status run = g.Run();
  ASSERT_TRUE(run.ok()) << run.ToString();
  for (const auto& [slot, by_index] : c["grads"].items()) {
    for (const auto& [k, values] : by_index.items()) {
      const Tensor& got = g.Out(slot + std::string(kGradSuffix), std::stoi(k));
      EXPECT_EQ(got.dims(), c["inputs"][slot][std::stoi(k)]["dims"].get<Dims>())
          << slot;
      EXPECT_EQ(Compare(got, values, Tolerance(got.dtype(), tol)), "")
          << slot << "@GRAD[" << k << "]";
    }
  }
}

}  // namespace

int CheckPaddleGoldens(const std::string& op, GoldenTolerance tol,
                       const std::string& file) {
  const OpSchema* schema = OpSchemaRegistry::Global().Find(op);
  EXPECT_NE(schema, nullptr) << op;
  if (schema == nullptr) return 0;
  int checked = 0;
  for (const Json& c : Goldens(file)["cases"]) {
    if (c["op"] != op) continue;
    SCOPED_TRACE(op + " case " + std::to_string(checked) + " attrs " +
                 c["attrs"].dump());
    OpTester t(op);
    for (const auto& [slot, entries] : c["inputs"].items()) {
      std::vector<Tensor> ins;
      for (const Json& e : entries) ins.push_back(TensorOf(e));
      t.Inputs(slot, std::move(ins));
    }
    for (const auto& [slot, entries] : c["outputs"].items()) {
      t.Output(slot, static_cast<int>(entries.size()));
    }
    // Written with dims only (make_goldens.py's UNFETCHED), for the
    // gradient op.
    if (schema->FindOutput("XShape") != nullptr) t.Output("XShape");
    SetAttrs(t, c["attrs"]);
    const Status run = t.Run();
    ++checked;
    EXPECT_TRUE(run.ok()) << run.ToString();
    if (!run.ok()) continue;
    for (const auto& [slot, entries] : c["outputs"].items()) {
      for (size_t k = 0; k < entries.size(); ++k) {
        const Tensor& got = t.Out(slot, static_cast<int>(k));
        Dims want = entries[k]["dims"].get<Dims>();
        if (want.empty()) want = {1};  // Paddle's 0-D result
        EXPECT_EQ(got.dims(), want) << slot;
        EXPECT_EQ(got.dtype(), DTypeFromName(entries[k]["dtype"])) << slot;
        EXPECT_EQ(
            Compare(got, entries[k]["values"], Tolerance(got.dtype(), tol)), "")
            << slot;
      }
    }
    if (!c["grads"].empty()) CheckGradient(c, *schema, t, tol);
  }
  return checked;
}

}  // namespace parex::testing
