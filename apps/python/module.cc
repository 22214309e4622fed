// parex._core: the C++ half of the Python module `parex` (python/parex/
// __init__.py is the other: Fluid's names, defaults and argument forms on
// top of these classes). Here: the error type, places, the two strategies,
// programs, scopes with their variables and tensors; the executors are in
// py_executors.cc.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "apps/python/py_cluster.h"
#include "apps/python/py_common.h"
#include "apps/python/py_executors.h"
#include "base/file_io.h"
#include "graph/ir/program.h"
#include "graph/ir/validate.h"
#include "kernels/scope.h"
#include "kernels/visible_devices.h"
#include "proto/program_io.h"
#ifdef PAREX_WITH_CUDA
#include "actors/comm/nccl_communicator.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/kernel_registry.h"
#endif

namespace parex::python {
namespace {

// A program parsed from Paddle's bytes and validated; `source` names them.
std::shared_ptr<Program> ParseProgram(const py::bytes& bytes,
                                      const std::string& source) {
  proto::ProgramDesc desc =
      ValueOrThrow(ParseProgramBinary(static_cast<std::string>(bytes), source));
  auto program = std::make_shared<Program>(std::move(desc));
  ThrowIfError(ValidateProgram(*program).WithContext(source));
  return program;
}

std::shared_ptr<Program> LoadProgram(const std::string& path) {
  auto program = std::make_shared<Program>(ValueOrThrow(Program::Load(path)));
  ThrowIfError(ValidateProgram(*program).WithContext("'" + path + "'"));
  return program;
}

void BindPlaces(py::module_& m) {
  py::class_<Place>(m, "Place")
      .def_static("cpu", &Place::CPU, py::arg("id") = 0)
      .def_static("cuda", &Place::CUDA, py::arg("device"), py::arg("slot") = 0)
      .def_static("parse",
                  [](const std::string& text) {
                    return ValueOrThrow(ParsePlace(text));
                  })
      .def_property_readonly("is_cpu", &Place::is_cpu)
      .def_property_readonly("is_cuda", &Place::is_cuda)
      .def_readonly("id", &Place::id)
      .def("__eq__", [](const Place& a, const Place& b) { return a == b; })
      .def(
          "__hash__",
          [](const Place& p) { return std::hash<std::string>()(p.ToString()); })
      .def("__str__", &Place::ToString)
      .def("__repr__", [](const Place& p) {
        return "parex.Place('" + p.ToString() + "')";
      });
  m.def("cuda_device_count", &VisibleCudaDevices,
        "CUDA devices this process sees (0 in a build without CUDA)");
  m.def("check_places", [](const std::vector<Place>& places) {
    ThrowIfError(ParallelExecutor::CheckPlaces(places));
  });
}

void BindStrategies(py::module_& m) {
  using BS = BuildStrategy;
  py::enum_<BS::ReduceStrategy>(m, "ReduceStrategy")
      .value("AllReduce", BS::ReduceStrategy::kAllReduce)
      .value("Reduce", BS::ReduceStrategy::kReduce);
  py::enum_<BS::GradientScale>(m, "GradientScaleStrategy")
      .value("CoeffNumDevice", BS::GradientScale::kCoeffNumDevice)
      .value("One", BS::GradientScale::kOne)
      .value("Customized", BS::GradientScale::kCustomized);
  py::class_<BS>(m, "BuildStrategy")
      .def(py::init<>())
      .def_readwrite("reduce_strategy", &BS::reduce)
      .def_readwrite("gradient_scale_strategy", &BS::gradient_scale)
      .def_readwrite("fuse_all_reduce_ops", &BS::fuse_all_reduce_ops)
      .def_readwrite("enable_sequential_execution",
                     &BS::enable_sequential_execution)
      .def_readwrite("memory_optimize", &BS::memory_optimize)
      .def_readwrite("sync_batch_norm", &BS::sync_batch_norm)
      .def_readwrite("channels_last", &BS::channels_last)
      .def_readwrite("debug_graphviz_path", &BS::debug_graphviz_path);
  py::class_<ExecutionStrategy>(m, "ExecutionStrategy")
      .def(py::init<>())
      .def_readwrite("num_threads", &ExecutionStrategy::num_threads)
      .def_readwrite("num_iteration_per_drop_scope",
                     &ExecutionStrategy::num_iteration_per_drop_scope)
      .def_readwrite("cuda_graphs", &ExecutionStrategy::cuda_graphs)
      // Fluid's switch between its two executors: parex has one (accepted,
      // always on).
      .def_property(
          "use_experimental_executor",
          [](const ExecutionStrategy&) { return true; },
          [](ExecutionStrategy&, bool) {});
}

void BindPrograms(py::module_& m) {
  py::class_<Program, std::shared_ptr<Program>>(m, "Program")
      .def_static("parse", &ParseProgram, py::arg("bytes"),
                  py::arg("source") = "program bytes",
                  "a ProgramDesc from Paddle's serialized bytes, validated")
      .def_static("load", &LoadProgram, py::arg("path"),
                  "a program file (.pdmodel, or text .pbtxt), validated")
      .def_property_readonly("num_blocks", &Program::num_blocks)
      .def("serialize",
           [](const Program& p) {
             return py::bytes(SerializeProgramBinary(p.proto()));
           })
      .def("op_types", [](const Program& p) {
        std::vector<std::string> types;
        for (const auto& op : p.global_block().ops()) {
          types.push_back(op->type());
        }
        return types;
      });
}

// A variable of a scope, keeping the scope alive.
struct PyVariable {
  std::shared_ptr<Scope> scope;
  Variable* var;
  std::string name;
};

// A variable's tensor, keeping the scope alive.
struct PyTensor {
  std::shared_ptr<Scope> scope;
  Tensor* tensor;
  std::string name;
};

void BindScopes(py::module_& m) {
  py::class_<Scope, std::shared_ptr<Scope>>(m, "Scope")
      .def(py::init([] { return std::make_shared<Scope>(); }))
      .def(
          "find_var",
          [](const std::shared_ptr<Scope>& s,
             const std::string& name) -> std::optional<PyVariable> {
            Variable* v = s->FindVar(name);
            if (v == nullptr) return std::nullopt;
            return PyVariable{s, v, name};
          },
          py::arg("name"))
      .def(
          "var",
          [](const std::shared_ptr<Scope>& s, const std::string& name) {
            return PyVariable{s, s->Var(name), name};
          },
          py::arg("name"))
      .def("local_var_names", &Scope::LocalVarNames);
  py::class_<PyVariable>(m, "Variable")
      .def_readonly("name", &PyVariable::name)
      .def("get_tensor", [](PyVariable& v) {
        return PyTensor{v.scope, v.var->GetMutableTensor(), v.name};
      });
  py::class_<PyTensor>(m, "LoDTensor")
      .def("shape",
           [](const PyTensor& t) {
             return std::vector<int64_t>(t.tensor->dims().begin(),
                                         t.tensor->dims().end());
           })
      .def("dtype",
           [](const PyTensor& t) {
             return std::string(DTypeName(t.tensor->dtype()));
           })
      .def("lod", [](const PyTensor& t) { return t.tensor->lod(); })
      .def("set_lod",
           [](PyTensor& t, const LoD& lod) { t.tensor->set_lod(lod); })
      .def("numpy",
           [](const PyTensor& t) {
             return ValueOrThrow(ArrayFromTensor(*t.tensor, t.name));
           })
      // numpy's protocol (numpy 2 passes copy=; the array is always a
      // copy).
      .def(
          "__array__",
          [](const PyTensor& t, py::object dtype, py::object copy) {
            (void)copy;
            py::array a = ValueOrThrow(ArrayFromTensor(*t.tensor, t.name));
            if (dtype.is_none()) return a;
            return py::array(a.attr("astype")(dtype));
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def(
          "set",
          [](PyTensor& t, const py::array& value, const py::object& place) {
            (void)place;  // host memory; executors copy onto their places
            *t.tensor = ValueOrThrow(TensorFromArray(value, t.name));
          },
          py::arg("value"), py::arg("place") = py::none());
}

void BindModule(py::module_& m) {
  m.doc() = "parex's C++ core; use the `parex` package";
#ifdef PAREX_WITH_CUDA
  RegisterCudaKernels(&KernelRegistry::Global());
  RegisterNcclCommunicator();
#endif
  static py::exception<StatusError> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      PyErr_SetString(error.ptr(), e.status.ToString().c_str());
    }
  });
  BindPlaces(m);
  BindStrategies(m);
  BindPrograms(m);
  BindScopes(m);
  BindExecutors(m);
  BindCluster(m);
}

}  // namespace
}  // namespace parex::python

PYBIND11_MODULE(_core, m) { parex::python::BindModule(m); }
