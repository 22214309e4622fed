// parex train / parex node: trains an example model or a user's program
// (train_job.h) with the ParallelExecutor; checkpoints, resume, signals.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "actors/cluster/cluster.h"
#include "actors/executor/parallel_executor.h"
#include "actors/trace/trace_summary.h"
#include "apps/cli/checkpoint.h"
#include "apps/cli/cli.h"
#include "apps/cli/train_job.h"
#include "apps/cli/train_support.h"
#include "apps/reader.h"
#include "base/digest.h"
#include "base/file_io.h"
#include "base/logging.h"
#include "proto/program_io.h"

namespace parex::cli {
namespace {

// SIGINT / SIGTERM while training: the running step finishes, a checkpoint
// is written (--checkpoint-dir), and the run exits with 128 + the signal.
volatile sig_atomic_t g_stop_signal = 0;
void OnStopSignal(int sig) { g_stop_signal = sig; }

}  // namespace

// RunTrain and RunNode: `topology` set for one node of a cluster.
int TrainMain(const std::string& cmd, const TrainOptions& o,
              const Topology* topology) {
  const auto wall_start = Clock::now();
  std::string places_text = o.places;
  int rank = 0;
  if (topology != nullptr) {
    rank = topology->Rank(o.node);
    if (rank < 0) {
      std::string names;
      for (const TopologyNode& n : topology->nodes)
        names += (names.empty() ? "" : ", ") + n.name;
      return Fail(cmd,
                  NotFound(topology->path + ": no node '" + o.node +
                           "' (nodes: " + names + ")"),
                  kExitUsage);
    }
    places_text = topology->nodes[rank].places_text;
  }
  StatusOr<Parallelism> parallel = ParseParallelism(places_text, o.mode);
  if (!parallel.ok()) return Fail(cmd, parallel.status(), kExitUsage);
  const std::vector<Place>* places = &parallel->places;
  BuildStrategy& build = parallel->build;
  const int world = topology != nullptr ? topology->TotalPlaces()
                                        : static_cast<int>(places->size());
  const int first_place = topology != nullptr ? topology->FirstPlace(rank) : 0;
  const bool writer = rank == 0;  // --save and --metrics
  if (Status s = CheckTrainOptions(o); !s.ok()) return Fail(cmd, s, kExitUsage);
  {
    const int64_t bucket = o.fuse_bucket_bytes.value_or(
        topology != nullptr ? kClusterBucketBytes : 0);
    build.fuse_all_reduce_ops = bucket > 0;
    if (bucket > 0) build.fuse_bucket_bytes = bucket;
  }
  build.sync_batch_norm = o.sync_batch_norm;
  const std::string sync_bn = o.sync_batch_norm ? " --sync-batch-norm" : "";
  const bool user_program = !o.program.empty();
  const auto load_start = Clock::now();
  bool usage = false;
  StatusOr<TrainJob> job =
      user_program ? ProgramJob(o, &usage) : ExampleJob(o, &usage);
  if (!job.ok())
    return Fail(cmd, job.status(), usage ? kExitUsage : kExitRuntime);
  LogInfo(Subsystem::kApp,
          "loaded " + std::to_string(job->columns[0].second.dim(0)) +
              " train rows in " + std::to_string(Seconds(load_start)) + " s");
  const int epochs = o.epochs.value_or(job->default_epochs);
  const int64_t batch = o.batch.value_or(job->default_batch);
  const int n = static_cast<int>(places->size());
  if (batch < world) {
    return Fail(
        cmd,
        InvalidArgument("--batch " + std::to_string(batch) +
                        " is smaller than the " + std::to_string(world) +
                        " places it is split over"),
        kExitUsage);
  }
  // Outputs are checked before any work: an unwritable --save or --trace is
  // found now, not after training.
  const std::string node_name = topology != nullptr ? o.node : "";
  const std::string save =
      ForNode(o.save.empty() ? job->default_save : o.save, node_name);
  const std::string trace_path = ForNode(o.trace, node_name);
  const std::string metrics_path = ForNode(o.metrics, node_name);
  if (writer) {
    if (Status s = CheckOutputDir(save, "--save"); !s.ok()) return Fail(cmd, s);
    if (!metrics_path.empty()) {
      if (Status s = CheckOutputFile(metrics_path, "--metrics"); !s.ok())
        return Fail(cmd, s);
    }
  }
  if (!trace_path.empty()) {
    if (Status s = CheckOutputFile(trace_path, "--trace"); !s.ok())
      return Fail(cmd, s);
  }

  StatusOr<BatchReader> reader = BatchReader::Create(
      job->columns, {batch, o.shuffle, static_cast<uint64_t>(o.seed),
                     /*drop_last=*/false});
  if (!reader.ok()) return Fail(cmd, reader.status());
  if (reader->num_rows() < batch) {
    return Fail(
        cmd,
        InvalidArgument("--batch " + std::to_string(batch) +
                        " is larger than the " +
                        std::to_string(reader->num_rows()) + " training rows"),
        kExitUsage);
  }

  // A node meets its peers once it knows its program: the handshake
  // compares the program's fingerprint and the options that shape training.
  std::unique_ptr<Cluster> cluster;
  // Once a node joined, its errors end the process at once (_Exit, after
  // the message): a call on another thread may still wait inside Gloo,
  // which cannot be cancelled, and teardown would wait with it; files are
  // written atomically, so nothing saved is lost. (PyTorch's NCCL watchdog
  // ends its process the same way.)
  auto fail = [&cmd, &cluster](const Status& s) -> int {
    const int rc = Fail(cmd, s);
    if (cluster != nullptr) {
      cluster->AnnounceFailure(s);
      std::fflush(nullptr);
      std::_Exit(rc);
    }
    return rc;
  };
  ExecutionStrategy exec;
  if (o.threads) exec.num_threads = *o.threads;
  if (topology != nullptr) {
    std::map<std::string, std::string> identity;
    identity["program"] =
        Sha256Hex(SerializeProgramBinary(job->main.proto()) + '\0' +
                  SerializeProgramBinary(job->startup.proto()));
    identity["options"] =
        job->identity + HandshakeOptions(o, batch, epochs, sync_bn, build);
    StatusOr<std::unique_ptr<Cluster>> joined =
        Cluster::Join(*topology, o.node, identity);
    if (!joined.ok()) return Fail(cmd, joined.status());
    cluster = std::move(*joined);
    // Until the executor exists, a lost peer only bounds the wait.
    cluster->SetLostHandler([cmd](const Status& s) {
      ExitUnlessEndedWithin(cmd, s, std::chrono::seconds(2));
    });
    build.world_places = world;
    build.num_trainers = cluster->size();
    build.trainer_id = cluster->rank();
    exec.communicator = cluster->MakeCommunicator();
    exec.first_place = first_place;
  }

  Scope scope;
  if (Status s = job->init(&scope); !s.ok()) return fail(s);
  // What a checkpoint must agree with to be resumed here.
  CheckpointState where;
  where.program = Sha256Hex(SerializeProgramBinary(job->main.proto()));
  where.options = job->identity + " --mode " + o.mode + " --batch " +
                  std::to_string(batch) + " --seed " + std::to_string(o.seed) +
                  (o.shuffle ? "" : " --no-shuffle") + sync_bn + " --places " +
                  std::to_string(world);
  if (!o.resume.empty()) {
    Status s = ResumeRun(cmd, ForNode(o.resume, node_name), writer,
                         cluster.get(), job->main, &where, &scope);
    if (!s.ok()) return fail(s);
  }
  // The persistables the startup program made (sorted names).
  std::vector<std::string> persistables = scope.LocalVarNames();
  std::sort(persistables.begin(), persistables.end());
  if (cluster != nullptr) {
    // Rank 0's initial persistables on every node.
    if (Status s = cluster->BroadcastPersistables(&scope, persistables);
        !s.ok()) {
      return fail(s);
    }
  }
  TraceRecorder trace(/*enabled=*/!trace_path.empty() && o.trace_from == 0);
  exec.trace = trace_path.empty() ? nullptr : &trace;
  StatusOr<std::unique_ptr<ParallelExecutor>> pe = ParallelExecutor::Create(
      *places, job->main, job->loss, &scope, build, exec);
  if (!pe.ok()) return fail(pe.status());
  // Random ops (training-mode dropout) draw by the step's number: a resumed
  // run draws what the uninterrupted one did at its steps.
  (*pe)->SetNextStep(where.step);
  // A lost peer aborts the step in flight (the coordinator's abort); the
  // handler is cleared before the executor goes.
  struct LostHandlerScope {
    Cluster* cluster;
    ~LostHandlerScope() {
      if (cluster != nullptr) cluster->SetLostHandler(nullptr);
    }
  } lost_scope{cluster.get()};
  if (cluster != nullptr) {
    // The step in flight is aborted; if the training loop has not ended
    // the process within 2 s (it waits inside a Gloo call on this thread,
    // the metrics' sum or a broadcast), the handler ends it, naming the
    // lost node.
    ParallelExecutor* executor = pe->get();
    cluster->SetLostHandler([executor, cmd](const Status& s) {
      executor->Abort(s);
      ExitUnlessEndedWithin(cmd, s, std::chrono::seconds(2));
    });
  }

  if (cluster != nullptr) {
    std::printf(
        "parex node: %s, rank %d of %d nodes (%s), places %d-%d of %d, %d "
        "worker%s%s\n",
        o.node.c_str(), cluster->rank(), cluster->size(),
        topology->path.c_str(), first_place, first_place + n - 1, world,
        (*pe)->num_threads(), (*pe)->num_threads() == 1 ? "" : "s",
        PinnedCpus().c_str());
  }
  std::printf(
      "parex %s: %s on %d %s place%s (%s), %lld train rows, "
      "%d epoch%s of %lld batches of %lld, seed %d\n",
      cmd.c_str(), job->title.c_str(), n,
      (*places)[0].is_sim() ? "simulated" : "CPU", n == 1 ? "" : "s",
      o.mode.c_str(), static_cast<long long>(reader->num_rows()), epochs,
      epochs == 1 ? "" : "s", static_cast<long long>(reader->num_batches()),
      static_cast<long long>(batch), o.seed);
  std::fflush(stdout);
  const bool live = o.progress && isatty(STDOUT_FILENO);
  const bool classifier = !job->accuracy.empty();
  std::vector<std::string> fetch = {job->loss};
  if (classifier) fetch.push_back(job->accuracy);
  const size_t first_extra = fetch.size();  // --fetch's values follow
  fetch.insert(fetch.end(), job->fetches.begin(), job->fetches.end());
  std::vector<double> fetch_sums(job->fetches.size());  // of this epoch
  const std::string& rows_column = job->columns[0].first;
  const int64_t total_steps = std::min<int64_t>(epochs * reader->num_batches(),
                                                o.steps.value_or(INT64_MAX));
  int64_t step = where.step, samples = 0;
  std::string
      metrics;  // JSON lines, rewritten at each epoch's end and checkpoint
  if (!o.resume.empty() && !metrics_path.empty() && writer) {
    metrics = MetricsLinesUpTo(metrics_path, where.step);
  }
  auto write_metrics = [&]() -> Status {
    if (metrics_path.empty() || !writer) return Status::Ok();
    return WriteFileBytes(metrics_path, metrics).WithContext("--metrics");
  };
  const auto train_start = Clock::now();
  auto last_draw = train_start - std::chrono::seconds(1);
  // A step's loss and accuracy, local sums until they are summed across
  // nodes: a cluster sums kMetricWindow steps' at once (one Gloo call, not
  // one per step), at points every node reaches at the same step.
  struct StepMetrics {
    int64_t step = 0, batch = 0;
    int epoch = 0;
    double loss = 0,
           accuracy = 0;          // sums over this node's places, or the values
    std::vector<double> fetched;  // --fetch: means, summed like the loss
    double samples_per_s = 0, wall_s = 0;
  };
  constexpr size_t kMetricWindow = 64;
  std::vector<StepMetrics> pending;
  double loss_sum = 0, acc_sum = 0;
  int64_t steps = 0;  // of this epoch, summed
  // Sums the pending steps across nodes, checks each loss, adds them to the
  // epoch's sums and the metrics lines.
  int stop = 0;  // the signal that stops every node after this settle
  auto settle = [&]() -> Status {
    if (pending.empty()) return Status::Ok();
    if (cluster == nullptr && g_stop_signal != 0) stop = g_stop_signal;
    if (cluster != nullptr) {
      std::vector<double> sums;
      const size_t width = 2 + job->fetches.size();
      for (const StepMetrics& m : pending) {
        sums.push_back(m.loss);
        sums.push_back(m.accuracy);
        sums.insert(sums.end(), m.fetched.begin(), m.fetched.end());
      }
      // A node told to stop tells the others here, at a step all reach.
      sums.push_back(g_stop_signal != 0 ? 1 : 0);
      PAREX_RETURN_IF_ERROR(
          cluster->SumAcrossNodes(&sums, "step metrics")
              .WithContext("epoch " + std::to_string(pending[0].epoch) +
                           ", steps " + std::to_string(pending[0].batch) + "-" +
                           std::to_string(pending.back().batch)));
      for (size_t i = 0; i < pending.size(); ++i) {
        pending[i].loss = sums[width * i] / world;
        pending[i].accuracy = sums[width * i + 1] / world;
        for (size_t f = 0; f < job->fetches.size(); ++f) {
          pending[i].fetched[f] = sums[width * i + 2 + f] / world;
        }
      }
      if (sums.back() > 0) stop = g_stop_signal != 0 ? g_stop_signal : SIGTERM;
    }
    for (const StepMetrics& m : pending) {
      if (!std::isfinite(m.loss)) {
        pending.clear();
        return Internal("the loss is " + std::to_string(m.loss) + " at epoch " +
                        std::to_string(m.epoch) + ", step " +
                        std::to_string(m.batch) +
                        ": training diverged (try a smaller --lr)");
      }
      loss_sum += m.loss;
      acc_sum += m.accuracy;
      for (size_t f = 0; f < m.fetched.size(); ++f)
        fetch_sums[f] += m.fetched[f];
      ++steps;
      if (!metrics_path.empty()) {
        char line[320], accuracy[64] = "";
        if (classifier)
          std::snprintf(accuracy, sizeof(accuracy), ", \"accuracy\": %.9g",
                        m.accuracy);
        std::string fetched;
        for (size_t f = 0; f < m.fetched.size(); ++f) {
          char value[64];
          std::snprintf(value, sizeof(value), "%.9g", m.fetched[f]);
          fetched += (f == 0 ? ", \"fetches\": {" : ", ") +
                     nlohmann::json(job->fetches[f]).dump() + ": " + value;
        }
        if (!fetched.empty()) fetched += "}";
        std::snprintf(line, sizeof(line),
                      "{\"step\": %lld, \"epoch\": %d, \"loss\": %.9g%s%s, "
                      "\"samples_per_s\": %.1f, \"wall_s\": %.6f}\n",
                      static_cast<long long>(m.step), m.epoch + 1, m.loss,
                      accuracy, fetched.c_str(), m.samples_per_s, m.wall_s);
        metrics += line;
      }
    }
    pending.clear();
    return Status::Ok();
  };
  // --eval-data: a test executor on the trained parameters (Fluid's
  // share_vars_from), made at the first evaluation; the mean loss (and
  // accuracy) over the evaluation rows, each place's weighted by its rows.
  std::unique_ptr<ParallelExecutor> eval_pe;
  auto evaluate = [&](int epoch) -> StatusOr<std::string> {
    if (eval_pe == nullptr) {
      ExecutionStrategy eval_exec;
      if (o.threads) eval_exec.num_threads = *o.threads;
      PAREX_ASSIGN_OR_RETURN(
          eval_pe,
          ParallelExecutor::Create(*places, job->eval_program, "", &scope,
                                   BuildStrategy(), eval_exec, pe->get()));
    }
    PAREX_ASSIGN_OR_RETURN(EvalResult e,
                           EvaluateJob(*job, eval_pe.get(), n, batch));
    const double loss = e.loss, accuracy = e.accuracy;
    const int64_t rows = e.rows;
    char line[200];
    if (classifier) {
      std::snprintf(line, sizeof(line),
                    "  evaluation: loss %.4f, accuracy %.4f on %lld rows\n",
                    loss, accuracy, static_cast<long long>(rows));
    } else {
      std::snprintf(line, sizeof(line),
                    "  evaluation: loss %.4f on %lld rows\n", loss,
                    static_cast<long long>(rows));
    }
    if (!metrics_path.empty()) {
      char json[240], acc[64] = "";
      if (classifier)
        std::snprintf(acc, sizeof(acc), ", \"accuracy\": %.9g", accuracy);
      std::snprintf(
          json, sizeof(json),
          "{\"eval\": true, \"step\": %lld, \"epoch\": %d, \"loss\": %.9g%s, "
          "\"rows\": %lld}\n",
          static_cast<long long>(step), epoch + 1, loss, acc,
          static_cast<long long>(rows));
      metrics += json;
    }
    return std::string(line);
  };
  // Writes a checkpoint of the state after the step just run (rank 0).
  auto checkpoint = [&](int64_t epoch,
                        int64_t next_batch) -> StatusOr<std::string> {
    if (o.checkpoint_dir.empty() || !writer) return std::string();
    CheckpointState state = where;
    state.step = step;
    state.epoch = next_batch < reader->num_batches() ? epoch : epoch + 1;
    state.batch = next_batch < reader->num_batches() ? next_batch : 0;
    PAREX_RETURN_IF_ERROR(write_metrics());
    return WriteCheckpoint(ForNode(o.checkpoint_dir, node_name), job->main,
                           scope, state, o.keep);
  };
  struct sigaction on_stop = {}, old_int = {}, old_term = {};
  on_stop.sa_handler = OnStopSignal;
  sigaction(SIGINT, &on_stop, &old_int);
  sigaction(SIGTERM, &on_stop, &old_term);
  int64_t last_epoch = where.epoch, last_batch = where.batch;  // the next batch
  for (int epoch = static_cast<int>(where.epoch);
       epoch < epochs && step < total_steps; ++epoch) {
    loss_sum = 0;
    acc_sum = 0;
    std::fill(fetch_sums.begin(), fetch_sums.end(), 0.0);
    steps = 0;
    const auto epoch_start = Clock::now();
    const int64_t first_batch = epoch == where.epoch ? where.batch : 0;
    BatchReader::Iterator batches = reader->Begin(epoch, first_batch);
    FeedMap feed;
    for (int64_t b = first_batch;
         step < total_steps && stop == 0 && batches.Next(&feed); ++b) {
      last_epoch = epoch;
      last_batch = b + 1;
      const int64_t rows = feed.at(rows_column).dim(0);
      if (rows < world) continue;  // a last batch too small to split
      if (!trace_path.empty() && step == o.trace_from) trace.set_enabled(true);
      if (!trace_path.empty() && step == o.trace_from + o.trace_steps) {
        trace.set_enabled(false);
      }
      if (job->lr_at) {
        // The schedule's rate on every place (each holds its own copy of a
        // persistable in AllReduce mode), as LRScheduler sets it in Paddle.
        if (Status s =
                SetLearningRate(pe->get(), job->lr_vars, job->lr_at(step));
            !s.ok()) {
          return fail(s);
        }
      }
      StepMetrics m;
      m.batch = b;
      m.epoch = epoch;
      Status step_status;
      if (cluster == nullptr) {
        StatusOr<std::vector<Tensor>> out = (*pe)->Run(feed, fetch);
        if (out.ok()) {
          m.loss = Mean((*out)[0]);
          if (classifier) m.accuracy = Mean((*out)[1]);
          for (size_t i = first_extra; i < out->size(); ++i) {
            m.fetched.push_back(Mean((*out)[i]));
          }
        }
        step_status = out.status();
      } else {
        StatusOr<std::vector<std::vector<Tensor>>> out = (*pe)->RunPerPlace(
            NodeShareOfBatch(feed, rows, first_place, n, world), fetch);
        step_status = out.status();
        if (out.ok()) {
          m.fetched.assign(job->fetches.size(), 0);
          for (size_t i = 0; i < out->size(); ++i) {
            for (const Tensor& t : (*out)[i]) {
              (i == 0            ? m.loss
               : i < first_extra ? m.accuracy
                                 : m.fetched[i - first_extra]) += Mean(t);
            }
          }
        }
      }
      ++step;
      samples += rows;
      m.step = step;
      m.samples_per_s = samples / std::max(Seconds(train_start), 1e-9);
      m.wall_s = Seconds(wall_start);
      if (!step_status.ok()) {
        if (live) std::printf("\n");
        return fail(step_status.WithContext("epoch " + std::to_string(epoch) +
                                            ", step " + std::to_string(b)));
      }
      pending.push_back(m);
      if (cluster == nullptr || pending.size() == kMetricWindow) {
        if (Status s = settle(); !s.ok()) {
          if (live) std::printf("\n");
          return fail(s);
        }
      }
      if (cluster != nullptr && g_stop_signal != 0 &&
          o.checkpoint_dir.empty()) {
        // Nothing to save: a node told to stop (its launcher gone, say)
        // stops now rather than at the nodes' next agreed step; a peer that
        // was not told sees it leave, as any lost node, naming it.
        if (live) std::printf("\n");
        std::printf("stopped by %s after step %lld\n",
                    g_stop_signal == SIGINT ? "SIGINT" : "SIGTERM",
                    static_cast<long long>(step));
        std::fflush(stdout);
        return 128 + g_stop_signal;
      }
      if (o.checkpoint_every > 0 && step % o.checkpoint_every == 0 &&
          stop == 0) {
        // The checkpoint's metrics lines include every step it holds: the
        // nodes settle their window here (every node checkpoints at the
        // same steps: --checkpoint-every is part of the handshake).
        if (Status s = settle(); !s.ok()) {
          if (live) std::printf("\n");
          return fail(s);
        }
        if (StatusOr<std::string> c = checkpoint(epoch, b + 1); !c.ok()) {
          if (live) std::printf("\n");
          return fail(c.status());
        }
      }
      if (live && steps > 0 && Seconds(last_draw) > 0.1) {
        last_draw = Clock::now();
        const double elapsed = Seconds(train_start);
        const double eta = elapsed / step * (total_steps - step);
        std::printf(
            "\r\033[Kepoch %d/%d  step %lld/%lld  loss %.4f  %.0f samples/s  "
            "ETA %s",
            epoch + 1, epochs, static_cast<long long>(b + 1),
            static_cast<long long>(reader->num_batches()), loss_sum / steps,
            samples / elapsed, Duration(eta).c_str());
        std::fflush(stdout);
      }
    }
    if (Status s = settle();
        !s.ok()) {  // every node ends the epoch at the same step
      if (live) std::printf("\n");
      return fail(s);
    }
    const double secs = Seconds(epoch_start);
    if (live) std::printf("\r\033[K");
    std::string extra;
    for (size_t f = 0; f < fetch_sums.size(); ++f) {
      char value[96];
      std::snprintf(value, sizeof(value), ", %s %.4g", job->fetches[f].c_str(),
                    fetch_sums[f] / std::max<int64_t>(steps, 1));
      extra += value;
    }
    if (classifier) {
      std::printf(
          "epoch %d/%d: loss %.4f, train accuracy %.4f%s, %lld steps, %.1f s\n",
          epoch + 1, epochs, loss_sum / std::max<int64_t>(steps, 1),
          acc_sum / std::max<int64_t>(steps, 1), extra.c_str(),
          static_cast<long long>(steps), secs);
    } else {
      std::printf("epoch %d/%d: loss %.4f%s, %lld steps, %.1f s\n", epoch + 1,
                  epochs, loss_sum / std::max<int64_t>(steps, 1), extra.c_str(),
                  static_cast<long long>(steps), secs);
    }
    if (!job->eval_columns.empty() && steps > 0) {
      StatusOr<std::string> evaluated = evaluate(epoch);
      if (!evaluated.ok())
        return fail(evaluated.status().WithContext("--eval-data"));
      std::printf("%s", evaluated->c_str());
    }
    std::fflush(stdout);
    if (Status s = write_metrics(); !s.ok()) return fail(s);
    if (stop != 0) break;
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (stop != 0 || !o.checkpoint_dir.empty()) {
    // The last checkpoint: where a stopped run resumes, or the end.
    StatusOr<std::string> c = checkpoint(last_epoch, last_batch);
    if (!c.ok()) return fail(c.status());
    if (stop != 0) {
      std::printf("stopped by %s after step %lld%s\n",
                  stop == SIGINT ? "SIGINT" : "SIGTERM",
                  static_cast<long long>(step),
                  c->empty() ? ""
                             : ("; checkpoint " + *c + " (--resume " +
                                ForNode(o.checkpoint_dir, node_name) + ")")
                                   .c_str());
      std::fflush(stdout);
      if (cluster != nullptr) {
        Status left = cluster->Leave();  // a stop is the error to report
        (void)left;
      }
      return 128 + stop;
    }
    if (!c->empty()) std::printf("checkpoint      %s\n", c->c_str());
  }
  const double train_seconds = Seconds(train_start);
  const std::string digest = ParameterDigest(scope, job->params);
  if (cluster != nullptr) {
    // Every node must end with rank 0's parameters, bit for bit.
    Tensor mine(DType::kUInt8, {static_cast<int64_t>(digest.size())});
    std::copy(digest.begin(), digest.end(), mine.data<uint8_t>());
    Tensor theirs = mine.Clone();
    PlaceTensors one = {&theirs};
    if (Status s = cluster->cross().Broadcast("parameter digest", one, 0);
        !s.ok()) {
      return fail(s);
    }
    if (std::memcmp(mine.raw_data(), theirs.raw_data(), mine.bytes()) != 0) {
      return fail(Internal("the parameters of node '" + o.node +
                           "' differ from rank 0's after training"));
    }
    // Rank 0's persistables (its first place's batch_norm statistics, which
    // are what a single process keeps) on every node: every node then holds
    // the model rank 0 saves.
    if (Status s = cluster->BroadcastPersistables(&scope, persistables);
        !s.ok()) {
      return fail(s);
    }
  }

  StatusOr<TrainJob::Finished> finished = job->finish(&scope, writer, save);
  if (!finished.ok()) return fail(finished.status());
  if (!trace_path.empty()) {
    std::map<std::string, std::string> metadata;
    if (cluster != nullptr) {  // what `parex trace merge` aligns the nodes by
      metadata["parex_node"] = o.node;
      metadata["parex_rank"] = std::to_string(cluster->rank());
      metadata["parex_clock_offset_us"] =
          std::to_string(cluster->clock_offset_us());
      metadata["parex_clock_rtt_us"] = std::to_string(cluster->clock_rtt_us());
    }
    if (Status s = WriteFileBytes(trace_path, (*pe)->TraceJson(metadata));
        !s.ok()) {
      return fail(s.WithContext("--trace"));
    }
  }

  std::printf("\n%s", finished->report.c_str());
  std::printf("wall time       %.1f s (training %.1f s)\n", Seconds(wall_start),
              train_seconds);
  std::printf("throughput      %.0f samples/s over %lld steps\n",
              samples / std::max(train_seconds, 1e-9),
              static_cast<long long>(step));
  std::printf("parameters      sha256 %s (trainable)\n", digest.c_str());
  std::printf("%s", finished->saved.c_str());
  if (!trace_path.empty()) {
    std::vector<bool> collective, backward;
    for (const SsaOp& op : (*pe)->graph().ops()) {
      collective.push_back(IsCollective(op.kind));
      backward.push_back(op.kind == SsaOpKind::kComputation &&
                         op.type.size() > 5 &&
                         op.type.compare(op.type.size() - 5, 5, "_grad") == 0);
    }
    std::printf("trace           %s\n", trace_path.c_str());
    std::printf("trace summary   %s\n",
                SummarizeTrace(trace.Spans(), collective, (*pe)->num_threads(),
                               &backward)
                    .ToString()
                    .c_str());
  }
  if (cluster != nullptr) {
    // Leave together: no node closes its connections while a peer still
    // reads from them.
    if (Status s = cluster->Leave(); !s.ok()) return fail(s);
  }
  return kExitOk;
}

int RunTrain(const TrainOptions& o) { return TrainMain("train", o, nullptr); }

int RunNode(const TrainOptions& o) {
  StatusOr<Topology> topology = LoadTopology(o.topology);
  if (!topology.ok()) return Fail("node", topology.status(), kExitUsage);
  return TrainMain("node", o, &*topology);
}

}  // namespace parex::cli
