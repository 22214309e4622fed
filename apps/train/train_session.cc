#include "apps/train/train_session.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>
#include <utility>

#include "apps/exit_codes.h"
#include "apps/train/lr_schedule.h"
#include "apps/train/stop_signal.h"
#include "base/digest.h"
#include "base/file_io.h"
#include "proto/program_io.h"

namespace parex::train {
namespace {

// What a checkpoint must agree with to be resumed by this run.
CheckpointState RunState(const TrainJob& job, const TrainOptions& o,
                         const TrainPlan& plan) {
  CheckpointState run;
  run.program = Sha256Hex(SerializeProgramBinary(job.main.proto()));
  run.options = job.identity + " --mode " + o.mode + " --batch " +
                std::to_string(plan.batch) + " --seed " +
                std::to_string(o.seed) + (o.shuffle ? "" : " --no-shuffle") +
                (o.sync_batch_norm ? " --sync-batch-norm" : "") + " --places " +
                std::to_string(plan.world);
  return run;
}

}  // namespace

Status SetOutputs(const TrainOptions& o, const std::string& node,
                  const std::string& default_save, TrainPlan* plan) {
  plan->save = ForNode(o.save.empty() ? default_save : o.save, node);
  plan->trace = ForNode(o.trace, node);
  plan->metrics = ForNode(o.metrics, node);
  plan->checkpoint_dir = ForNode(o.checkpoint_dir, node);
  plan->resume = ForNode(o.resume, node);
  if (plan->writer) {
    PAREX_RETURN_IF_ERROR(CheckOutputDir(plan->save, "--save"));
    if (!plan->metrics.empty()) {
      PAREX_RETURN_IF_ERROR(CheckOutputFile(plan->metrics, "--metrics"));
    }
  }
  if (!plan->trace.empty()) {
    PAREX_RETURN_IF_ERROR(CheckOutputFile(plan->trace, "--trace"));
  }
  return Status::Ok();
}

TrainSession::TrainSession(std::string cmd, const TrainOptions& o, TrainJob job,
                           BatchReader reader, TrainPlan plan,
                           std::unique_ptr<ClusterSession> cluster)
    : cmd_(std::move(cmd)),
      o_(o),
      job_(std::move(job)),
      reader_(std::move(reader)),
      plan_(std::move(plan)),
      cluster_(std::move(cluster)),
      checkpointer_(RunState(job_, o, plan_), plan_.checkpoint_dir, o.keep,
                    plan_.writer),
      trace_(/*enabled=*/!plan_.trace.empty() && o.trace_from == 0),
      metrics_(job_.fetches, !job_.accuracy.empty(), plan_.world,
               !plan_.metrics.empty()),
      progress_(o.progress) {
  fetch_ = {job_.loss};
  if (!job_.accuracy.empty()) fetch_.push_back(job_.accuracy);
  first_extra_ = fetch_.size();
  fetch_.insert(fetch_.end(), job_.fetches.begin(), job_.fetches.end());
}

// The lost-peer handler goes before the executor it aborts.
TrainSession::~TrainSession() {
  if (cluster_ != nullptr) cluster_->ClearLostHandler();
  // The executors and the plan hold the cluster's communicator (Gloo, whose
  // rendezvous store lives on the node's actor system): they let it go
  // before the cluster shuts that system down.
  eval_pe_.reset();
  pe_.reset();
  plan_.exec.communicator.reset();
}

int TrainSession::Failed(const Status& status) {
  if (cluster_ != nullptr) {
    cluster_->FailAndExit(status, kExitRuntime, metrics_.diverged());
  }
  return Fail(cmd_, status);
}

int TrainSession::Run() {
  if (Status s = Prepare(); !s.ok()) return Failed(s);
  PrintHeader();
  const CheckpointState& from = checkpointer_.position();
  total_steps_ = std::min<int64_t>(plan_.epochs * reader_.num_batches(),
                                   o_.steps.value_or(INT64_MAX));
  step_ = from.step;
  if (!plan_.resume.empty() && !plan_.metrics.empty() && plan_.writer) {
    metrics_.KeepLines(MetricsLinesUpTo(plan_.metrics, from.step));
  }
  train_start_ = Clock::now();
  first_step_ = step_;
  collective_at_start_ = CollectiveTimeNow();
  own_at_last_step_ = collective_at_start_.own_s;
  StopSignals signals;
  last_epoch_ = from.epoch;
  last_batch_ = from.batch;
  if (Status s = TrainEpochs(); !s.ok()) return Failed(s);
  if (stopped_ != 0) return 128 + stopped_;
  signals.Restore();
  if (stop_ != 0 || !plan_.checkpoint_dir.empty()) {
    // The last checkpoint: where a stopped run resumes, or the end.
    StatusOr<std::string> c = Checkpoint(last_epoch_, last_batch_);
    if (!c.ok()) return Failed(c.status());
    if (stop_ != 0) return Stop(stop_, *c);
    if (!c->empty()) std::printf("checkpoint      %s\n", c->c_str());
  }
  return Conclude();
}

Status TrainSession::Prepare() {
  PserverRun* ps = plan_.pserver_run.get();
  PAREX_RETURN_IF_ERROR(job_.init(
      &scope_, ps != nullptr ? ps->InitSkips() : std::vector<std::string>()));
  Cluster* cluster = cluster_ != nullptr ? cluster_->cluster() : nullptr;
  if (!plan_.resume.empty()) {
    // With pservers, the first trainer's part of the checkpoint leaves out
    // what the pservers hold: they read their own parts below.
    PAREX_RETURN_IF_ERROR(checkpointer_.Resume(
        cmd_, plan_.resume, cluster, job_.main, &scope_,
        ps != nullptr ? ps->HeldNames() : std::vector<std::string>()));
  }
  // The persistables the startup program made (sorted names), but the
  // prefetched tables and their state, which only their pservers hold.
  persistables_ = scope_.LocalVarNames();
  if (ps != nullptr) {
    for (const std::string& table : ps->table_state()) {
      persistables_.erase(
          std::remove(persistables_.begin(), persistables_.end(), table),
          persistables_.end());
    }
  }
  std::sort(persistables_.begin(), persistables_.end());
  if (cluster_ != nullptr) {
    // Rank 0's initial persistables on every node.
    PAREX_RETURN_IF_ERROR(
        cluster_->BroadcastPersistables(&scope_, persistables_));
  }
  if (ps != nullptr && !plan_.resume.empty()) {
    // Each pserver's part of the checkpoint, then the pservers' state
    // (the tables left out) on every node.
    PAREX_RETURN_IF_ERROR(
        ps->LoadShard(plan_.resume, checkpointer_.position().step, &scope_));
    PAREX_RETURN_IF_ERROR(
        ps->Gather(&scope_, &cluster_->cluster()->cross(), /*tables=*/false)
            .WithContext("the pservers' state"));
  }
  if (ps != nullptr) PAREX_RETURN_IF_ERROR(ps->HoldRows(&scope_));
  ExecutionStrategy exec = plan_.exec;
  exec.trace = plan_.trace.empty() ? nullptr : &trace_;
  PAREX_ASSIGN_OR_RETURN(
      pe_, ParallelExecutor::Create(plan_.places, job_.main, job_.loss, &scope_,
                                    plan_.build, exec));
  // Random ops (training-mode dropout) draw by the step's number: a resumed
  // run draws what the uninterrupted one did at its steps.
  pe_->SetNextStep(checkpointer_.position().step);
  // Batches gathered where the places copy them from without staging
  // (pinned host memory for CUDA places).
  reader_.set_batch_allocator(pe_->feed_allocator());
  if (cluster_ != nullptr) cluster_->AbortOnLoss(pe_.get());
  return Status::Ok();
}

void TrainSession::PrintHeader() const {
  const int n = static_cast<int>(plan_.places.size());
  if (cluster_ != nullptr) {
    cluster_->PrintBanner(plan_.first_place, n, plan_.world,
                          pe_->num_threads());
  }
  if (plan_.pserver_run != nullptr) {
    std::printf("parameter servers %s\n",
                plan_.pserver_run->Describe().c_str());
  }
  std::printf(
      "parex %s: %s on %d %s place%s (%s), %lld train rows, "
      "%d epoch%s of %lld batches of %lld, seed %d\n",
      cmd_.c_str(), job_.title.c_str(), n, PlaceKindTitle(plan_.places[0].kind),
      n == 1 ? "" : "s", o_.mode.c_str(),
      static_cast<long long>(reader_.num_rows()), plan_.epochs,
      plan_.epochs == 1 ? "" : "s",
      static_cast<long long>(reader_.num_batches()),
      static_cast<long long>(plan_.batch), o_.seed);
  PrintFixedLearningRates();
  std::fflush(stdout);
}

void TrainSession::PrintFixedLearningRates() const {
  for (const std::string& name : job_.fixed_lr_vars) {
    const Variable* var = scope_.FindVar(name);
    const Tensor* t = var != nullptr ? var->GetTensor() : nullptr;
    if (t == nullptr || !t->initialized() || t->numel() != 1 ||
        !t->place().is_cpu()) {
      continue;
    }
    double value = 0;
    if (t->dtype() == DType::kFP32) {
      value = t->data<float>()[0];
    } else if (t->dtype() == DType::kFP64) {
      value = t->data<double>()[0];
    } else {
      continue;
    }
    std::printf(
        "learning rate   '%s' stays %g: no op of the program changes it (if "
        "Paddle trained it with an LRScheduler, which runs outside the "
        "program, give that schedule with --lr-schedule)\n",
        name.c_str(), value);
  }
}

Status TrainSession::TrainEpochs() {
  for (int epoch = static_cast<int>(checkpointer_.position().epoch);
       epoch < plan_.epochs && step_ < total_steps_; ++epoch) {
    PAREX_RETURN_IF_ERROR(TrainEpoch(epoch));
    if (stopped_ != 0 || stop_ != 0) break;
  }
  return Status::Ok();
}

Status TrainSession::TrainEpoch(int epoch) {
  metrics_.StartEpoch();
  const auto epoch_start = Clock::now();
  const CheckpointState& from = checkpointer_.position();
  const int64_t first_batch = epoch == from.epoch ? from.batch : 0;
  BatchPrefetcher batches(reader_.Begin(epoch, first_batch, FeedShare()));
  FeedMap feed;
  for (int64_t b = first_batch;
       step_ < total_steps_ && stop_ == 0 && NextBatch(&batches, &feed); ++b) {
    last_epoch_ = epoch;
    last_batch_ = b + 1;
    const int64_t rows = reader_.batch_rows(b);  // the whole batch's
    if (rows < plan_.world) continue;  // a last batch too small to split
    SwitchTrace();
    if (job_.lr_at) {
      // The schedule's rate on every place (each holds its own copy of a
      // persistable in AllReduce mode), as LRScheduler sets it in Paddle.
      PAREX_RETURN_IF_ERROR(
          SetLearningRate(pe_.get(), job_.lr_vars, job_.lr_at(step_)));
    }
    PAREX_RETURN_IF_ERROR(RunStep(feed, rows, epoch, b));
    PAREX_RETURN_IF_ERROR(AfterStep(epoch, b));
    if (stopped_ != 0) return Status::Ok();
  }
  return EndEpoch(epoch, epoch_start);
}

std::optional<RowShare> TrainSession::FeedShare() const {
  if (cluster_ == nullptr) return std::nullopt;
  // A parameter server feeds nothing; a trainer its places' rows only.
  if (plan_.pserver_run != nullptr && plan_.pserver_run->pserver()) {
    return RowShare{plan_.world, 0, plan_.world};
  }
  return RowShare{plan_.first_place, static_cast<int>(plan_.places.size()),
                  plan_.world};
}

bool TrainSession::NextBatch(BatchPrefetcher* batches, FeedMap* feed) {
  const Clock::time_point start = Clock::now();
  const bool more = batches->Next(feed);
  last_feed_s_ = Seconds(start);
  feed_s_ += last_feed_s_;
  return more;
}

void TrainSession::SwitchTrace() {
  if (plan_.trace.empty()) return;
  if (step_ == o_.trace_from) trace_.set_enabled(true);
  if (step_ == o_.trace_from + o_.trace_steps) trace_.set_enabled(false);
}

Status TrainSession::Fetch(const FeedMap& feed, int64_t rows, StepMetrics* m) {
  if (cluster_ == nullptr) {
    PAREX_ASSIGN_OR_RETURN(std::vector<Tensor> out, pe_->Run(feed, fetch_));
    m->loss = Mean(out[0]);
    if (first_extra_ > 1) m->accuracy = Mean(out[1]);
    for (size_t i = first_extra_; i < out.size(); ++i) {
      m->fetched.push_back(Mean(out[i]));
    }
    return Status::Ok();
  }
  const int n = static_cast<int>(plan_.places.size());
  m->fetched.assign(job_.fetches.size(), 0);
  if (plan_.pserver_run != nullptr && plan_.pserver_run->pserver()) {
    // A pserver's step: the gradients in, its updates, the parameters out.
    return pe_->RunPerPlace({FeedMap()}, {}).status();
  }
  PAREX_ASSIGN_OR_RETURN(
      std::vector<std::vector<Tensor>> out,
      pe_->RunPerPlace(
          NodeShareOfBatch(feed, rows, plan_.first_place, n, plan_.world),
          fetch_));
  for (size_t i = 0; i < out.size(); ++i) {
    for (const Tensor& t : out[i]) {
      (i == 0             ? m->loss
       : i < first_extra_ ? m->accuracy
                          : m->fetched[i - first_extra_]) += Mean(t);
    }
  }
  return Status::Ok();
}

Status TrainSession::RunStep(const FeedMap& feed, int64_t rows, int epoch,
                             int64_t b) {
  StepMetrics m;
  m.batch = b;
  m.epoch = epoch;
  const Cluster::CollectiveTime before = CollectiveTimeNow();
  const Clock::time_point start = Clock::now();
  const Status ran = Fetch(feed, rows, &m);
  const double step_s = Seconds(start);
  step_s_ += step_s;
  m.step_ms = step_s * 1e3;
  const Cluster::CollectiveTime after = CollectiveTimeNow();
  // (Each reading converts all the ticks so far at the clock's latest rate:
  // a part that did not grow can read a hair below 0.)
  m.collective_ms = std::max(0.0, after.step_s - before.step_s) * 1e3;
  m.other_ms = std::max(0.0, after.own_s - own_at_last_step_) * 1e3;
  own_at_last_step_ = after.own_s;
  m.feed_ms = last_feed_s_ * 1e3;
  ++step_;
  samples_ += rows;
  m.step = step_;
  m.samples_per_s = samples_ / std::max(Seconds(train_start_), 1e-9);
  m.wall_s = Seconds(plan_.wall_start);
  if (!ran.ok()) {
    progress_.Break();
    return ran.WithContext("epoch " + std::to_string(epoch) + ", step " +
                           std::to_string(b));
  }
  metrics_.Add(std::move(m));
  if (cluster_ == nullptr || metrics_.pending() == MetricsWindow::kWindow) {
    if (Status s = Settle(); !s.ok()) {
      progress_.Break();
      return s;
    }
  }
  return Status::Ok();
}

Status TrainSession::AfterStep(int epoch, int64_t b) {
  const int signal = StopSignals::Received();
  if (cluster_ != nullptr && signal != 0 && o_.checkpoint_dir.empty()) {
    // Nothing to save: a node told to stop (its launcher gone, say) stops
    // now rather than at the nodes' next agreed step; a peer that was not
    // told sees it leave, as any lost node, naming it.
    progress_.Break();
    std::printf("stopped by %s after step %lld\n", StopSignalName(signal),
                static_cast<long long>(step_));
    std::fflush(stdout);
    stopped_ = signal;
    return Status::Ok();
  }
  if (o_.checkpoint_every > 0 && step_ % o_.checkpoint_every == 0 &&
      stop_ == 0) {
    // The checkpoint's metrics lines include every step it holds: the
    // nodes settle their window here (every node checkpoints at the same
    // steps: --checkpoint-every is part of the handshake).
    Status s = Settle();
    if (s.ok()) s = Checkpoint(epoch, b + 1).status();
    if (!s.ok()) {
      progress_.Break();
      return s;
    }
  }
  if (metrics_.steps() > 0) {
    progress_.Draw(epoch, plan_.epochs, b + 1, reader_.num_batches(),
                   metrics_.mean_loss(), samples_, step_, total_steps_,
                   train_start_);
  }
  return Status::Ok();
}

Status TrainSession::Settle() {
  Cluster* cluster = cluster_ != nullptr ? cluster_->cluster() : nullptr;
  PAREX_ASSIGN_OR_RETURN(const int stop, metrics_.Settle(cluster));
  if (stop != 0) stop_ = stop;
  return Status::Ok();
}

Status TrainSession::EndEpoch(int epoch, Clock::time_point epoch_start) {
  // Every node ends the epoch at the same step.
  if (Status s = Settle(); !s.ok()) {
    progress_.Break();
    return s;
  }
  const double seconds = Seconds(epoch_start);
  progress_.Clear();
  metrics_.PrintEpochLine(epoch, plan_.epochs, seconds);
  // A pserver holds blocks of the parameters (and the trainers evaluate).
  const bool pserver =
      plan_.pserver_run != nullptr && plan_.pserver_run->pserver();
  if (!job_.eval_columns.empty() && metrics_.steps() > 0 && !pserver) {
    StatusOr<std::string> evaluated = Evaluate(epoch);
    if (!evaluated.ok()) return evaluated.status().WithContext("--eval-data");
    std::printf("%s", evaluated->c_str());
  }
  std::fflush(stdout);
  return WriteMetrics();
}

// --eval-data: a test executor on the trained parameters (Fluid's
// share_vars_from), made at the first evaluation; the mean loss (and
// accuracy) over the evaluation rows, each place's weighted by its rows.
StatusOr<std::string> TrainSession::Evaluate(int epoch) {
  const int n = static_cast<int>(plan_.places.size());
  if (eval_pe_ == nullptr) {
    ExecutionStrategy eval_exec;
    if (o_.threads) eval_exec.num_threads = *o_.threads;
    eval_exec.cuda_graphs = o_.cuda_graphs;
    PAREX_ASSIGN_OR_RETURN(
        eval_pe_,
        ParallelExecutor::Create(plan_.places, job_.eval_program, "", &scope_,
                                 BuildStrategy(), eval_exec, pe_.get()));
  }
  PAREX_ASSIGN_OR_RETURN(EvalResult e,
                         EvaluateJob(job_, eval_pe_.get(), n, plan_.batch));
  char line[200];
  if (!job_.accuracy.empty()) {
    std::snprintf(line, sizeof(line),
                  "  evaluation: loss %.4f, accuracy %.4f on %lld rows\n",
                  e.loss, e.accuracy, static_cast<long long>(e.rows));
  } else {
    std::snprintf(line, sizeof(line), "  evaluation: loss %.4f on %lld rows\n",
                  e.loss, static_cast<long long>(e.rows));
  }
  metrics_.AddEvalLine(step_, epoch, e.loss, e.accuracy, e.rows);
  return std::string(line);
}

// Writes a checkpoint of the state after the step just run (the writer).
StatusOr<std::string> TrainSession::Checkpoint(int64_t epoch,
                                               int64_t next_batch) {
  std::vector<std::string> held;
  if (plan_.pserver_run != nullptr) {
    // Each pserver writes its part, and every node waits for all of them
    // before the first trainer completes the checkpoint with its own.
    PAREX_RETURN_IF_ERROR(DrainPserverState());
    if (!checkpointer_.dir().empty()) {
      PAREX_RETURN_IF_ERROR(plan_.pserver_run
                                ->WriteShard(checkpointer_.dir(), step_,
                                             checkpointer_.keep(), scope_)
                                .status());
    }
    std::vector<double> written = {1.0};
    PAREX_RETURN_IF_ERROR(cluster_->cluster()->SumAcrossNodes(
        &written, "the pservers' checkpoint parts"));
    held = plan_.pserver_run->HeldNames();
  }
  if (!checkpointer_.writes()) return std::string();
  PAREX_RETURN_IF_ERROR(WriteMetrics());
  // Each persistable from the place updating it.
  PAREX_RETURN_IF_ERROR(pe_->SyncPersistables());
  return checkpointer_.Write(step_, epoch, next_batch, reader_.num_batches(),
                             job_.main, scope_, held);
}

Status TrainSession::DrainPserverState() {
  // Async mode's parameters in flight first: every place then holds them.
  auto* ps = dynamic_cast<PserverCommunicator*>(plan_.exec.communicator.get());
  if (ps != nullptr) PAREX_RETURN_IF_ERROR(ps->Drain());
  return pe_->SyncPersistables();
}

Status TrainSession::GatherPserverState() {
  PAREX_RETURN_IF_ERROR(DrainPserverState());
  return plan_.pserver_run
      ->Gather(&scope_, &cluster_->cluster()->cross(), /*tables=*/true)
      .WithContext("the pservers' state");
}

// The --metrics lines so far, rewritten at each epoch's end and checkpoint.
Status TrainSession::WriteMetrics() const {
  if (plan_.metrics.empty() || !plan_.writer) return Status::Ok();
  return WriteFileBytes(plan_.metrics, metrics_.lines())
      .WithContext("--metrics");
}

int TrainSession::Stop(int signal, const std::string& checkpoint) {
  std::printf("stopped by %s after step %lld%s\n", StopSignalName(signal),
              static_cast<long long>(step_),
              checkpoint.empty() ? ""
                                 : ("; checkpoint " + checkpoint +
                                    " (--resume " + plan_.checkpoint_dir + ")")
                                       .c_str());
  std::fflush(stdout);
  if (cluster_ != nullptr) {
    Status left = cluster_->Leave();  // a stop is the error to report
    (void)left;
  }
  return 128 + signal;
}

int TrainSession::Conclude() {
  const double train_seconds = Seconds(train_start_);
  StatusOr<std::string> account = StepAccount();
  if (!account.ok()) return Failed(account.status());
  // The scope then holds every persistable's current value (Reduce mode's
  // optimizer state lives with its parameter's owner): the model saved,
  // the digest and the broadcast to other nodes read it.
  if (Status s = pe_->SyncPersistables(); !s.ok()) return Failed(s);
  if (plan_.pserver_run != nullptr) {
    if (Status s = GatherPserverState(); !s.ok()) return Failed(s);
    plan_.pserver_run->Release(&scope_);
  }
  // With pservers, the prefetched tables are on the first trainer alone:
  // the digest every node checks leaves them out.
  std::vector<std::string> digested = job_.params;
  std::string left_out;
  if (plan_.pserver_run != nullptr) {
    for (const std::string& table : plan_.pserver_run->prefetched()) {
      digested.erase(std::remove(digested.begin(), digested.end(), table),
                     digested.end());
      left_out += (left_out.empty() ? "; without the table " : ", ") +
                  ("'" + table + "'");
    }
  }
  const std::string digest = ParameterDigest(scope_, digested);
  if (cluster_ != nullptr) {
    if (Status s = cluster_->CheckSameParameters(digest); !s.ok()) {
      return Failed(s);
    }
    // Rank 0's persistables (its first place's batch_norm statistics, which
    // are what a single process keeps) on every node: every node then holds
    // the model rank 0 saves.
    if (Status s = cluster_->BroadcastPersistables(&scope_, persistables_);
        !s.ok()) {
      return Failed(s);
    }
  }
  StatusOr<TrainJob::Finished> finished =
      job_.finish(&scope_, plan_.writer, plan_.save);
  if (!finished.ok()) return Failed(finished.status());
  if (Status s = WriteTrace(); !s.ok()) return Failed(s);
  std::printf("\n%s", finished->report.c_str());
  std::printf("wall time       %.1f s (training %.1f s)\n",
              Seconds(plan_.wall_start), train_seconds);
  std::printf("throughput      %.0f samples/s over %lld steps\n",
              samples_ / std::max(train_seconds, 1e-9),
              static_cast<long long>(step_));
  std::printf("%s", account->c_str());
  PrintPserverTraffic();
  std::printf("parameters      sha256 %s (trainable%s)\n", digest.c_str(),
              left_out.c_str());
  std::printf("%s", finished->saved.c_str());
  PrintTraceSummary();
  if (cluster_ != nullptr) {
    if (Status s = cluster_->Leave(); !s.ok()) return Failed(s);
  }
  return kExitOk;
}

}  // namespace parex::train
