// The executors of the Python module (py_executors.h).
//
// Ctrl-C: Python handles SIGINT only when the interpreter runs, which it
// does not while a step holds the calling thread with the GIL released. For
// the length of a ParallelExecutor step on the main thread, SIGINT's
// handler is parex's: it writes a byte to a pipe (all a handler may safely
// do), a watcher thread reading the pipe aborts the running executors
// (ParallelExecutor::Abort, callable from any thread), the step returns its
// abort, and the caller, with Python's handler back in place, raises
// KeyboardInterrupt instead of the abort's error.
#include "apps/python/py_executors.h"

#include <errno.h>
#include <pybind11/stl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "apps/python/py_cluster.h"
#include "base/dims.h"
#include "graph/ir/program.h"
#include "kernels/reference_executor.h"
#include "kernels/scope.h"

namespace parex::python {
namespace {

// --- Ctrl-C during a step ---------------------------------------------------

int g_pipe[2] = {-1, -1};
volatile sig_atomic_t g_interrupted = 0;
std::mutex g_running_mu;
std::set<ParallelExecutor*> g_running;  // guarded by g_running_mu
const std::thread::id g_main_thread = std::this_thread::get_id();

// Ctrl-Cs written to the pipe, and those the watcher passed on (lock-free
// atomics: safe in a signal handler).
std::atomic<unsigned> g_sent{0};
std::atomic<unsigned> g_handled{0};

void OnInterrupt(int) {
  g_interrupted = 1;
  g_sent.fetch_add(1, std::memory_order_acq_rel);
  const char byte = 1;
  ssize_t ignored = write(g_pipe[1], &byte, 1);
  (void)ignored;
}

// Starts the watcher once; false when no pipe could be made (Ctrl-C then
// waits for the step to end, as without parex's handler).
bool StartWatcher() {
  static const bool started = [] {
    if (pipe(g_pipe) != 0) return false;
    std::thread([] {
      char byte;
      for (;;) {
        const ssize_t n = read(g_pipe[0], &byte, 1);
        if (n < 0 && errno == EINTR) continue;  // a signal on this thread
        if (n <= 0) return;
        std::lock_guard<std::mutex> lock(g_running_mu);
        for (ParallelExecutor* pe : g_running) {
          pe->Abort(Aborted("interrupted (Ctrl-C)"));
        }
        g_handled.fetch_add(1, std::memory_order_acq_rel);
      }
    }).detach();
    return true;
  }();
  return started;
}

// While alive: `pe` is running, and SIGINT (on the main thread) aborts it.
class InterruptibleStep {
 public:
  explicit InterruptibleStep(ParallelExecutor* pe) : pe_(pe) {
    {
      std::lock_guard<std::mutex> lock(g_running_mu);
      g_running.insert(pe_);
    }
    if (std::this_thread::get_id() == g_main_thread && StartWatcher()) {
      g_interrupted = 0;
      struct sigaction on_int = {};
      on_int.sa_handler = OnInterrupt;
      installed_ = sigaction(SIGINT, &on_int, &old_) == 0;
    }
  }
  ~InterruptibleStep() {
    if (installed_) {
      sigaction(SIGINT, &old_, nullptr);
      // A Ctrl-C is this step's: wait (1 s at most) until the watcher has
      // passed it on, or its abort could reach the caller's next step.
      const auto give_up =
          std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (g_handled.load(std::memory_order_acquire) !=
                 g_sent.load(std::memory_order_acquire) &&
             std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
      }
    }
    std::lock_guard<std::mutex> lock(g_running_mu);
    g_running.erase(pe_);
  }
  // Whether SIGINT came during the step.
  bool interrupted() const { return installed_ && g_interrupted != 0; }

 private:
  ParallelExecutor* pe_;
  struct sigaction old_ = {};
  bool installed_ = false;
};

// Raises KeyboardInterrupt as Python's own handler would have.
[[noreturn]] void RaiseKeyboardInterrupt() {
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  throw py::error_already_set();
}

// --- feeds and fetches -------------------------------------------------------

// `allocator`: where the feed's tensors are made (an executor's
// feed_allocator), or null.
FeedMap FeedOf(const py::dict& feed, Allocator* allocator = nullptr) {
  FeedMap map;
  for (const auto& [key, value] : feed) {
    const std::string name = py::str(key).cast<std::string>();
    py::array array = py::array::ensure(value);
    if (!array) {
      throw StatusError{
          InvalidArgument("feed '" + name + "' is not an array-like value")};
    }
    map[name] =
        ValueOrThrow(TensorFromArray(array, "feed '" + name + "'", allocator));
  }
  return map;
}

py::list ArraysOf(const std::vector<Tensor>& tensors,
                  const std::vector<std::string>& names) {
  py::list out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    out.append(ValueOrThrow(ArrayFromTensor(tensors[i], names[i])));
  }
  return out;
}

// --- Executor ----------------------------------------------------------------

// Fluid's Executor: the program's block 0 in op order on the host (its
// place is where the ParallelExecutors that follow take its results).
class PyExecutor {
 public:
  explicit PyExecutor(Place place) : place_(place) {}

  py::list Run(const Program& program, const std::shared_ptr<Scope>& scope,
               const py::dict& feed, const std::vector<std::string>& fetch) {
    FeedMap feeds = FeedOf(feed);
    StatusOr<std::vector<Tensor>> r = Internal("not run");
    {
      py::gil_scoped_release release;
      r = executor_.Run(program, scope.get(), feeds, fetch);
    }
    return ArraysOf(ValueOrThrow(std::move(r)), fetch);
  }

  Place place() const { return place_; }

 private:
  Place place_;
  ReferenceExecutor executor_;
};

// --- ParallelExecutor --------------------------------------------------------

// share_vars_from: every persistable tensor `mine` reads must be one of
// `theirs`, of the same dtype and shape (an executor of another program
// would leave this one reading variables nobody initialised).
Status CheckSharedPersistables(const Program& mine, const Program& theirs) {
  const Block& block = mine.global_block();
  for (const auto& var : block.vars()) {
    if (!var->persistable() || !var->is_tensor()) continue;
    const VarDesc* other = theirs.global_block().FindVar(var->name());
    const std::string what =
        "share_vars_from: persistable '" + var->name() + "' of this program";
    if (other == nullptr || !other->persistable()) {
      return InvalidArgument(what +
                             " is not a persistable of the shared executor's "
                             "program (an executor of another program?)");
    }
    if (other->dtype() != var->dtype() || other->dims() != var->dims()) {
      return InvalidArgument(
          what + " is " + DTypeName(var->dtype()) + " " +
          DimsToString(var->dims()) + ", in the shared executor's program " +
          DTypeName(other->dtype()) + " " + DimsToString(other->dims()));
    }
  }
  return Status::Ok();
}

class PyParallelExecutor {
 public:
  PyParallelExecutor(const std::vector<Place>& places,
                     std::shared_ptr<Program> program,
                     const std::string& loss_name, std::shared_ptr<Scope> scope,
                     const BuildStrategy& build, const ExecutionStrategy& exec,
                     const PyParallelExecutor* share_vars_from,
                     PyCluster* cluster)
      : program_(std::move(program)),
        scope_(std::move(scope)),
        cluster_(cluster) {
    if (share_vars_from != nullptr) {
      if (share_vars_from->scope_ != scope_) {
        throw StatusError{InvalidArgument(
            "share_vars_from: that executor uses another scope")};
      }
      ThrowIfError(
          CheckSharedPersistables(*program_, *share_vars_from->program_));
    }
    pe_ = ValueOrThrow(CreateOn(
        places, loss_name, build, exec,
        share_vars_from != nullptr ? share_vars_from->pe_.get() : nullptr));
    if (share_vars_from != nullptr) shared_from_ = share_vars_from->pe_;
    // A lost peer aborts the training executor's step.
    if (cluster_ != nullptr && !loss_name.empty()) {
      cluster_->AbortOnLoss(pe_.get());
    }
  }
  ~PyParallelExecutor() {
    if (cluster_ != nullptr) cluster_->Forget(pe_.get());
  }
  PyParallelExecutor(const PyParallelExecutor&) = delete;
  PyParallelExecutor& operator=(const PyParallelExecutor&) = delete;

  // The executor, on this node's places of the cluster when there is one
  // (its collectives across the nodes; a training executor first takes
  // rank 0's persistables).
  StatusOr<std::unique_ptr<ParallelExecutor>> CreateOn(
      std::vector<Place> places, const std::string& loss_name,
      BuildStrategy build, ExecutionStrategy exec,
      const ParallelExecutor* share) {
    py::gil_scoped_release release;
    if (cluster_ != nullptr) {
      places = cluster_->places();
      PAREX_RETURN_IF_ERROR(cluster_->Configure(&build, &exec));
      if (share == nullptr) {
        PAREX_RETURN_IF_ERROR(cluster_->BroadcastPersistables(scope_.get()));
      }
    }
    return ParallelExecutor::Create(places, *program_, loss_name, scope_.get(),
                                    build, exec, share);
  }

  // One feed dict split over the places: the fetches merged along dim 0.
  py::list Run(const py::dict& feed, const std::vector<std::string>& fetch) {
    FeedMap feeds = FeedOf(feed, pe_->feed_allocator());
    StatusOr<std::vector<Tensor>> r = Internal("not run");
    bool interrupted = false;
    {
      py::gil_scoped_release release;
      InterruptibleStep step(pe_.get());
      r = pe_->Run(feeds, fetch);
      interrupted = step.interrupted();
    }
    if (interrupted) RaiseKeyboardInterrupt();
    return ArraysOf(ValueOrThrow(std::move(r)), fetch);
  }

  // One feed dict per place: per fetch name, the list of per-place arrays.
  py::list RunPerPlace(const std::vector<py::dict>& feed,
                       const std::vector<std::string>& fetch) {
    std::vector<FeedMap> feeds;
    for (const py::dict& f : feed) {
      feeds.push_back(FeedOf(f, pe_->feed_allocator()));
    }
    StatusOr<std::vector<std::vector<Tensor>>> r = Internal("not run");
    bool interrupted = false;
    {
      py::gil_scoped_release release;
      InterruptibleStep step(pe_.get());
      r = pe_->RunPerPlace(feeds, fetch);
      interrupted = step.interrupted();
    }
    if (interrupted) RaiseKeyboardInterrupt();
    std::vector<std::vector<Tensor>> per_fetch = ValueOrThrow(std::move(r));
    py::list out;
    for (size_t i = 0; i < per_fetch.size(); ++i) {
      std::vector<std::string> names(per_fetch[i].size(), fetch[i]);
      out.append(ArraysOf(per_fetch[i], names));
    }
    return out;
  }

  void SyncPersistables() {
    Status s;
    {
      py::gil_scoped_release release;
      s = pe_->SyncPersistables();
    }
    ThrowIfError(s);
  }

  int device_count() const { return static_cast<int>(pe_->places().size()); }
  std::vector<Place> places() const { return pe_->places(); }
  std::shared_ptr<Scope> scope() const { return scope_; }
  int64_t steps_run() const { return pe_->steps_run(); }

 private:
  std::shared_ptr<Program> program_;
  std::shared_ptr<Scope> scope_;
  PyCluster* cluster_;  // kept alive by the Python object (keep_alive)
  // The executor whose variables this one shares lives as long as this one.
  std::shared_ptr<ParallelExecutor> shared_from_;
  std::shared_ptr<ParallelExecutor> pe_;
};

}  // namespace

void BindExecutors(py::module_& m) {
  py::class_<PyExecutor>(m, "Executor")
      .def(py::init<Place>(), py::arg("place"))
      .def_property_readonly("place", &PyExecutor::place)
      .def("run", &PyExecutor::Run, py::arg("program"), py::arg("scope"),
           py::arg("feed"), py::arg("fetch_list"));
  py::class_<PyParallelExecutor>(m, "ParallelExecutor")
      .def(py::init<const std::vector<Place>&, std::shared_ptr<Program>,
                    const std::string&, std::shared_ptr<Scope>,
                    const BuildStrategy&, const ExecutionStrategy&,
                    const PyParallelExecutor*, PyCluster*>(),
           py::arg("places"), py::arg("program"), py::arg("loss_name"),
           py::arg("scope"), py::arg("build_strategy"),
           py::arg("exec_strategy"), py::arg("share_vars_from"),
           py::arg("cluster"), py::keep_alive<1, 8>(), py::keep_alive<1, 9>())
      .def("run", &PyParallelExecutor::Run, py::arg("feed"),
           py::arg("fetch_list"))
      .def("run_per_place", &PyParallelExecutor::RunPerPlace, py::arg("feed"),
           py::arg("fetch_list"))
      .def("sync_persistables", &PyParallelExecutor::SyncPersistables)
      .def_property_readonly("device_count", &PyParallelExecutor::device_count)
      .def_property_readonly("places", &PyParallelExecutor::places)
      .def_property_readonly("scope", &PyParallelExecutor::scope)
      .def_property_readonly("steps_run", &PyParallelExecutor::steps_run);
}

}  // namespace parex::python
