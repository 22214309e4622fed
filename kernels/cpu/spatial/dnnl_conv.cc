#include "kernels/cpu/spatial/dnnl_conv.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>

#include "base/config.h"
#include "kernels/cpu/blas.h"

#ifdef PAREX_WITH_DNNL
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/spatial/dnnl_conv_descs.h"
#include "oneapi/dnnl/dnnl.hpp"

// libdnnl is built on OpenMP (libgomp): each thread that calls it gets a team
// of all cores unless told otherwise.
extern "C" void omp_set_num_threads(int num_threads);
#endif

namespace parex {
namespace cpu {

bool DnnlConvParams::operator==(const DnnlConvParams& o) const {
  auto key = [](const DnnlConvParams& p) {
    return std::make_tuple(p.n, p.c, p.h, p.w, p.m, p.groups, p.kh, p.kw, p.oh,
                           p.ow, p.stride_h, p.stride_w, p.dilation_h,
                           p.dilation_w, p.pad_top, p.pad_bottom, p.pad_left,
                           p.pad_right, p.bias, p.activation, p.threshold,
                           p.residual, p.nhwc);
  };
  return key(*this) == key(o);
}

namespace {
DnnlConvMode ModeFromEnvironment() {
  const std::string v = GetConfig("PAREX_DNNL_CONV");
  if (v == "0") return DnnlConvMode::kNever;
  if (v == "1") return DnnlConvMode::kAlways;
  return DnnlConvMode::kWhereFaster;
}
std::atomic<DnnlConvMode> g_dnnl_conv_mode{ModeFromEnvironment()};
std::atomic<int64_t> g_dnnl_conv_executions{0};
}  // namespace

int64_t DnnlConvExecutions() {
  return g_dnnl_conv_executions.load(std::memory_order_relaxed);
}

DnnlConvMode GetDnnlConvMode() {
  return g_dnnl_conv_mode.load(std::memory_order_relaxed);
}

void SetDnnlConvMode(DnnlConvMode mode) {
  g_dnnl_conv_mode.store(mode, std::memory_order_relaxed);
}

namespace {

// kWhereFaster's rule for fp32 NCHW (dnnl_conv.h; figures in bench/README.md,
// "Kernels").
bool OneDnnIsFaster(const DnnlConvParams& p) {
  const int64_t c = p.c / p.groups, m = p.m / p.groups;
  // Depthwise (one input and one output channel per group): oneDNN's
  // kernels over channel blocks, where im2col would make one tiny GEMM per
  // channel (MobileNet-v2 at batch 32: 79 -> 27 ms a run on one core).
  if (c == 1 && m == 1 && p.groups > 1) return true;
  if (m % 16 != 0) return false;
  // A stem on an image's few channels: oneDNN's kernels for a narrow input
  // (ResNet-18's 7x7 3->64 of stride 2 at batch 32: 4.2 -> 3.3 ms, its
  // filter gradient 6.2 -> 4.2; MobileNet's 3x3 3->32 0.53 -> 0.49, 1.35 ->
  // 0.41). LeNet's 1->20 has no whole block and stays with im2col.
  if (c <= 4) return p.kh * p.kw > 1;
  if (c % 16 != 0) return false;
  // A 1x1 of stride 1 is one GEMM per image on the NCHW tensors as they
  // lie (no im2col), faster than reordering them into blocks and back on
  // planes of 64 pixels and up (ResNet-50's 512->128 on 8x8 at batch 32:
  // 1.10 ms against oneDNN's 1.21), not on smaller ones, where each GEMM is
  // a thin sliver (1024->256 on 4x4: 1.27 -> 1.10 ms; 512->2048 on 2x2:
  // 5.6 -> 1.7). Strided 1x1s need im2col's gather: oneDNN (ResNet-18's
  // 256->512 of stride 2 on 4x4: 0.77 -> 0.17 ms, gradients 1.10 -> 0.45).
  const bool unpadded = p.pad_top == 0 && p.pad_left == 0 &&
                        p.pad_bottom == 0 && p.pad_right == 0;
  const bool direct_gemm =
      p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && unpadded;
  return !direct_gemm || p.oh * p.ow <= 16;
}

}  // namespace

bool DnnlConvChosen(const DnnlConvParams& p) {
  if (!DnnlAvailable() || p.groups <= 0) return false;
  switch (GetDnnlConvMode()) {
    case DnnlConvMode::kNever:
      return false;
    case DnnlConvMode::kAlways:
      return true;
    case DnnlConvMode::kWhereFaster:
      break;
  }
  return OneDnnIsFaster(p);
}

#ifndef PAREX_WITH_DNNL

bool DnnlAvailable() { return false; }

struct DnnlConv::Impl {};
DnnlConv::DnnlConv() : impl_(nullptr) {}
DnnlConv::~DnnlConv() = default;
bool DnnlConv::Forward(const DnnlConvParams&, const float*, const float*,
                       float*, const float*, bool, const float*) {
  return false;
}
bool DnnlConv::ForwardSupported(const DnnlConvParams&) { return false; }
bool DnnlConv::BackwardData(const DnnlConvParams&, const float*, const float*,
                            float*) {
  return false;
}
bool DnnlConv::BackwardSupported(const DnnlConvParams&, bool, bool) {
  return false;
}
bool DnnlConv::BackwardWeights(const DnnlConvParams&, const float*,
                               const float*, float*) {
  return false;
}

#else  // PAREX_WITH_DNNL

bool DnnlAvailable() { return true; }

namespace {

using conv_descs::Descs;
using conv_descs::Engine;
using conv_descs::ForwardPd;
using conv_descs::FusedAttr;
using conv_descs::FusedForwardPd;
using conv_descs::MakeDescs;
using conv_descs::Plain;
using conv_descs::Pointwise;
using conv_descs::ThreadStream;
using conv_descs::UserScratchpad;
using dnnl::memory;
using Tag = memory::format_tag;

// OpenMP told how many threads run oneDNN's work for the calling thread
// (cpu::IntraOpThreads, 1 by default), before the thread creates or runs a
// primitive (oneDNN picks its blocking for the thread count it sees at
// creation).
void SingleThreaded() { UseIntraOpThreads(); }

}  // namespace

struct DnnlConv::Impl {
  // One argument of a primitive: parex's plain layout, the layout the
  // primitive chose and, when they differ, the reorder between them and the
  // buffer the primitive's side lives in.
  struct Arg {
    int id = 0;
    bool output = false;
    memory::desc user, chosen;
    bool reordered = false;
    dnnl::reorder reorder;
    // An output that holds a residual before the primitive runs (a sum
    // post-op): reordered in first, then out.
    bool refill = false;
    dnnl::reorder reorder_in;
    memory residual_mem;          // the residual, in the user layout
    memory user_mem, chosen_mem;  // made on the first run
    // The buffers they point at now: parex's own, and the kept weights, are
    // pointed at again only when they change (oneDNN zeroes a padded
    // layout's padding each time).
    const void* user_at = nullptr;
    const void* chosen_at = nullptr;
  };
  static void PointAt(memory* m, const void** at, const void* buffer) {
    if (*at == buffer) return;
    m->set_data_handle(const_cast<void*>(buffer));
    *at = buffer;
  }
  // Where reordered arguments and the scratchpad live while a primitive
  // runs: a set borrowed from the process's pool for the call (Execute
  // returns only when the work is done), so a model's convolutions hold
  // as many sets as run at once, not one each (nor one per worker).
  struct Buffers {
    std::vector<uint8_t> args[3];
    std::vector<uint8_t> scratchpad;
    std::vector<uint8_t> gathered;  // a strided pointwise's pixels
  };
  class BorrowedBuffers {
   public:
    BorrowedBuffers() {
      std::lock_guard<std::mutex> lock(mu());
      if (!pool().empty()) {
        buffers_ = std::move(pool().back());
        pool().pop_back();
      } else {
        buffers_ = std::make_unique<Buffers>();
      }
    }
    ~BorrowedBuffers() {
      std::lock_guard<std::mutex> lock(mu());
      pool().push_back(std::move(buffers_));
    }
    Buffers* operator->() { return buffers_.get(); }

   private:
    static std::mutex& mu() {
      static std::mutex m;
      return m;
    }
    static std::vector<std::unique_ptr<Buffers> >& pool() {
      static auto* p = new std::vector<std::unique_ptr<Buffers> >();
      return *p;
    }
    std::unique_ptr<Buffers> buffers_;
  };
  static uint8_t* Grown(std::vector<uint8_t>* buffer, size_t bytes) {
    if (buffer->size() < bytes) buffer->resize(bytes);
    return buffer->data();
  }
  // One primitive of a kind, for the shape it was made for.
  struct Prepared {
    bool made = false;
    bool supported = false;
    DnnlConvParams params;
    dnnl::primitive primitive;
    Arg args[3];
    memory::desc scratch;
    memory scratch_mem;
    memory::desc bias;  // the fused forward's, when params.bias
    memory bias_mem;
    const void* scratch_at = nullptr;
    const void* bias_at = nullptr;
    // The residual read by a binary post-op (a pointwise matmul's), not
    // summed into dst.
    bool binary_residual = false;
    // A pointwise matmul of stride > 1: the pixels it reads are gathered
    // into a borrowed buffer, its src.
    bool gather = false;
    memory residual_mem;
    const void* residual_at = nullptr;
    std::unordered_map<int, memory> run_args;  // empty until the first run
    // Forward with constant weights: their reorder, kept (shared with every
    // primitive of the process reading the same weights in the same
    // layout: places sharing a parameter keep one copy), and the buffer it
    // was made from (null: none kept).
    std::shared_ptr<std::vector<uint8_t> > kept_weights;
    const void* kept_from = nullptr;
  };
  Prepared forward, backward_data, backward_weights;
  bool EnsureBackwardData(const DnnlConvParams& p);
  bool EnsureBackwardWeights(const DnnlConvParams& p);

  static void SetArg(Arg* arg, int id, bool output, const memory::desc& user,
                     const memory::desc& chosen) {
    arg->id = id;
    arg->output = output;
    arg->user = user;
    arg->chosen = chosen;
    arg->reordered = user != chosen;
    if (arg->reordered) {
      memory user_mem(user, Engine(), DNNL_MEMORY_NONE);
      memory chosen_mem(chosen, Engine(), DNNL_MEMORY_NONE);
      arg->reorder = output ? dnnl::reorder(chosen_mem, user_mem)
                            : dnnl::reorder(user_mem, chosen_mem);
    }
  }

  // Pointwise(p)'s product as a matmul primitive in `prep`: the NHWC tensors
  // as [N*H*W, C] and [N*H*W, M], the OIHW filter [M, C] read as [C, M].
  // False where oneDNN offers only its reference matmul (the convolution
  // then serves).
  static bool MakePointwise(const DnnlConvParams& p, Prepared* prep) {
    const memory::dim rows = p.n * p.oh * p.ow;
    const memory::desc src = Plain({rows, p.c}, Tag::ab);
    const memory::desc weights = Plain({p.c, p.m}, Tag::ba);
    const memory::desc dst = Plain({rows, p.m}, Tag::ab);
    const memory::desc bias = Plain({1, p.m}, Tag::ab);
    const memory::desc any_weights = Plain({p.c, p.m}, Tag::any);
    dnnl::matmul::desc desc =
        p.bias ? dnnl::matmul::desc(src, any_weights, bias, dst)
               : dnnl::matmul::desc(src, any_weights, dst);
    dnnl::matmul::primitive_desc pd;
    try {
      pd = dnnl::matmul::primitive_desc(desc, FusedAttr(p, &dst), Engine());
    } catch (const dnnl::error&) {
      return false;
    }
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return false;
    prep->primitive = dnnl::matmul(pd);
    prep->bias = bias;
    prep->binary_residual = p.residual;
    prep->gather = p.stride_h > 1;
    SetArg(&prep->args[0], DNNL_ARG_SRC, false, src, pd.src_desc());
    SetArg(&prep->args[1], DNNL_ARG_WEIGHTS, false, weights, pd.weights_desc());
    SetArg(&prep->args[2], DNNL_ARG_DST, true, dst, pd.dst_desc());
    prep->scratch = pd.scratchpad_desc();
    return true;
  }

  // Makes `prep` for `p` with `make` unless it is already made for `p`.
  template <typename Make>
  bool Ensure(Prepared* prep, const DnnlConvParams& p, Make make) {
    if (prep->made && prep->params == p) return prep->supported;
    SingleThreaded();
    prep->made = true;
    prep->params = p;
    prep->run_args.clear();
    prep->binary_residual = false;
    prep->gather = false;
    prep->kept_weights.reset();
    prep->kept_from = nullptr;
    try {
      make(prep);
      prep->supported = true;
    } catch (const dnnl::error&) {
      prep->supported = false;  // no implementation: im2col serves it
    }
    return prep->supported;
  }

  // The weights `a.user_mem` points at, reordered into `a.chosen`: made
  // once per (buffer, layout) while any primitive keeps them.
  static std::shared_ptr<std::vector<uint8_t> > KeptWeights(
      Arg& a, dnnl::stream& stream) {
    struct Entry {
      const void* from;
      memory::desc layout;
      std::weak_ptr<std::vector<uint8_t> > data;
    };
    static std::mutex mu;
    static auto* entries = new std::vector<Entry>();
    const void* from = a.user_mem.get_data_handle();
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = entries->begin(); it != entries->end();) {
      std::shared_ptr<std::vector<uint8_t> > data = it->data.lock();
      if (data == nullptr) {
        it = entries->erase(it);
        continue;
      }
      if (it->from == from && it->layout == a.chosen) return data;
      ++it;
    }
    auto data = std::make_shared<std::vector<uint8_t> >(a.chosen.get_size());
    a.chosen_mem.set_data_handle(data->data());
    a.reorder.execute(stream, a.user_mem, a.chosen_mem);
    stream.wait();
    entries->push_back({from, a.chosen, data});
    return data;
  }

  // The memory objects of `prep`'s arguments and its argument map, made
  // on its first run; a run then only points them at its buffers.
  static void MakeRunArgs(Prepared* prep) {
    prep->scratch_at = prep->bias_at = prep->residual_at = nullptr;
    if (prep->binary_residual) {
      prep->residual_mem =
          memory(prep->args[2].user, Engine(), DNNL_MEMORY_NONE);
      prep->run_args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                             prep->residual_mem);
    }
    for (Arg& a : prep->args) {
      a.user_at = a.chosen_at = nullptr;
      a.user_mem = memory(a.user, Engine(), DNNL_MEMORY_NONE);
      if (a.reordered) {
        a.chosen_mem = memory(a.chosen, Engine(), DNNL_MEMORY_NONE);
      }
      prep->run_args.emplace(a.id, a.reordered ? a.chosen_mem : a.user_mem);
    }
    prep->scratch_mem = memory(prep->scratch, Engine(), DNNL_MEMORY_NONE);
    prep->run_args.emplace(DNNL_ARG_SCRATCHPAD, prep->scratch_mem);
    if (prep->params.bias) {
      prep->bias_mem = memory(prep->bias, Engine(), DNNL_MEMORY_NONE);
      prep->run_args.emplace(DNNL_ARG_BIAS, prep->bias_mem);
    }
  }

  // Points `prep`'s weights argument at its kept reorder of the constant
  // weights at `weights`: made once per weights buffer.
  static void PointAtKeptWeights(Prepared* prep, const void* weights,
                                 dnnl::stream& stream) {
    Arg& a = prep->args[1];
    if (prep->kept_from != weights || prep->kept_weights == nullptr) {
      a.chosen_at = nullptr;  // KeptWeights may point it elsewhere
      prep->kept_weights = KeptWeights(a, stream);
      prep->kept_from = weights;
    }
    PointAt(&a.chosen_mem, &a.chosen_at, prep->kept_weights->data());
  }

  // The pixels a strided pointwise product reads, from the NHWC `src`, in
  // `into`: [N, OH, OW, C].
  static const void* Gather(const DnnlConvParams& p, const void* src,
                            std::vector<uint8_t>* into) {
    const size_t pixel = static_cast<size_t>(p.c) * sizeof(float);
    uint8_t* out = Grown(into, pixel * p.n * p.oh * p.ow);
    const uint8_t* in = static_cast<const uint8_t*>(src);
    for (int64_t b = 0; b < p.n; ++b) {
      for (int64_t y = 0; y < p.oh; ++y) {
        const uint8_t* row = in + ((b * p.h + y * p.stride_h) * p.w) * pixel;
        for (int64_t x = 0; x < p.ow; ++x, out += pixel) {
          std::memcpy(out, row + x * p.stride_w * pixel, pixel);
        }
      }
    }
    return into->data();
  }

  // Runs `prep` on parex's buffers `ptrs` (in the order of prep.args):
  // inputs reordered into the primitive's layout first, outputs back after.
  // The memory objects and the argument map are made once per shape and only
  // pointed at this run's buffers, so a steady step allocates nothing here.
  void Execute(Prepared& prep, const void* const (&ptrs)[3],
               const void* bias = nullptr, bool constant_weights = false,
               const void* residual = nullptr) {
    SingleThreaded();
    dnnl::stream& stream = ThreadStream();
    BorrowedBuffers buffers;
    if (prep.run_args.empty()) MakeRunArgs(&prep);
    if (prep.params.bias) PointAt(&prep.bias_mem, &prep.bias_at, bias);
    if (prep.binary_residual) {
      PointAt(&prep.residual_mem, &prep.residual_at, residual);
    }
    PointAt(&prep.scratch_mem, &prep.scratch_at,
            Grown(&buffers->scratchpad, prep.scratch.get_size()));
    for (int i = 0; i < 3; ++i) {
      Arg& a = prep.args[i];
      PointAt(&a.user_mem, &a.user_at,
              i == 0 && prep.gather
                  ? Gather(prep.params, ptrs[0], &buffers->gathered)
                  : ptrs[i]);
      if (!a.reordered) continue;
      if (i == 1 && constant_weights) {
        PointAtKeptWeights(&prep, ptrs[i], stream);
        continue;
      }
      // A borrowed buffer another primitive may have used in between:
      // pointed at (its padding zeroed) every time.
      a.chosen_mem.set_data_handle(
          Grown(&buffers->args[i], a.chosen.get_size()));
      a.chosen_at = nullptr;
      if (!a.output) a.reorder.execute(stream, a.user_mem, a.chosen_mem);
      if (a.refill) {
        if (!a.residual_mem) {
          a.residual_mem = memory(a.user, Engine(), DNNL_MEMORY_NONE);
        }
        a.residual_mem.set_data_handle(const_cast<void*>(residual));
        a.reorder_in.execute(stream, a.residual_mem, a.chosen_mem);
      }
    }
    prep.primitive.execute(stream, prep.run_args);
    for (Arg& a : prep.args) {
      if (a.reordered && a.output) {
        a.reorder.execute(stream, a.chosen_mem, a.user_mem);
      }
    }
    stream.wait();
    g_dnnl_conv_executions.fetch_add(1, std::memory_order_relaxed);
  }
};

DnnlConv::DnnlConv() : impl_(new Impl) {}
DnnlConv::~DnnlConv() { delete impl_; }

bool DnnlConv::ForwardSupported(const DnnlConvParams& p) {
  Impl& im = *impl_;
  return im.Ensure(&im.forward, p, [&p](Impl::Prepared* prep) {
    if (Pointwise(p) && Impl::MakePointwise(p, prep)) return;
    prep->bias = Plain({p.m}, Tag::a);
    const Descs d = MakeDescs(p);
    auto pd = p.bias || p.activation != 0 || p.residual || p.nhwc
                  ? FusedForwardPd(d, p)
                  : ForwardPd(d);
    // NHWC only where oneDNN has real kernels for it: its reference code
    // would be far slower than parex's copies to NCHW and im2col.
    if (p.nhwc && std::string(pd.impl_info_str()).rfind("ref", 0) == 0) {
      throw dnnl::error(dnnl_unimplemented, "reference NHWC convolution");
    }
    prep->primitive = dnnl::convolution_forward(pd);
    Impl::SetArg(&prep->args[0], DNNL_ARG_SRC, false, d.src, pd.src_desc());
    Impl::SetArg(&prep->args[1], DNNL_ARG_WEIGHTS, false, d.weights,
                 pd.weights_desc());
    Impl::SetArg(&prep->args[2], DNNL_ARG_DST, true, d.dst, pd.dst_desc());
    Impl::Arg& dst = prep->args[2];
    dst.refill = p.residual && dst.reordered;
    if (dst.refill) {
      dst.reorder_in =
          dnnl::reorder(memory(dst.user, Engine(), DNNL_MEMORY_NONE),
                        memory(dst.chosen, Engine(), DNNL_MEMORY_NONE));
    }
    prep->scratch = pd.scratchpad_desc();
  });
}

bool DnnlConv::Forward(const DnnlConvParams& p, const float* src,
                       const float* weights, float* dst, const float* bias,
                       bool constant_weights, const float* residual) {
  Impl& im = *impl_;
  if (p.bias && bias == nullptr) return false;
  if (p.residual && residual == nullptr) return false;
  if (!ForwardSupported(p)) return false;
  const Impl::Arg& out = im.forward.args[2];
  if (p.residual && !out.refill && !im.forward.binary_residual &&
      residual != dst) {
    // The primitive sums into dst as it lies.
    std::memcpy(dst, residual, out.user.get_size());
  }
  im.Execute(im.forward, {src, weights, dst}, bias, constant_weights, residual);
  return true;
}

// NHWC only where oneDNN has real kernels for it (as forward).
void RejectReferenceNhwc(const DnnlConvParams& p, const char* impl) {
  if (p.nhwc && std::string(impl).rfind("ref", 0) == 0) {
    throw dnnl::error(dnnl_unimplemented, "reference NHWC convolution");
  }
}

bool DnnlConv::Impl::EnsureBackwardData(const DnnlConvParams& p) {
  return Ensure(&backward_data, p, [&p](Prepared* prep) {
    const Descs d = MakeDescs(p, /*backward=*/true);
    dnnl::convolution_backward_data::desc desc(
        dnnl::algorithm::convolution_direct, d.any_src, d.any_weights,
        d.any_dst, d.strides, d.dilations, d.pad_l, d.pad_r);
    dnnl::convolution_backward_data::primitive_desc pd(desc, UserScratchpad(),
                                                       Engine(), ForwardPd(d));
    RejectReferenceNhwc(p, pd.impl_info_str());
    prep->primitive = dnnl::convolution_backward_data(pd);
    SetArg(&prep->args[0], DNNL_ARG_WEIGHTS, false, d.weights,
           pd.weights_desc());
    SetArg(&prep->args[1], DNNL_ARG_DIFF_DST, false, d.dst, pd.diff_dst_desc());
    SetArg(&prep->args[2], DNNL_ARG_DIFF_SRC, true, d.src, pd.diff_src_desc());
    prep->scratch = pd.scratchpad_desc();
  });
}

bool DnnlConv::Impl::EnsureBackwardWeights(const DnnlConvParams& p) {
  return Ensure(&backward_weights, p, [&p](Prepared* prep) {
    const Descs d = MakeDescs(p, /*backward=*/true);
    dnnl::convolution_backward_weights::desc desc(
        dnnl::algorithm::convolution_direct, d.any_src, d.any_weights,
        d.any_dst, d.strides, d.dilations, d.pad_l, d.pad_r);
    dnnl::convolution_backward_weights::primitive_desc pd(
        desc, UserScratchpad(), Engine(), ForwardPd(d));
    RejectReferenceNhwc(p, pd.impl_info_str());
    prep->primitive = dnnl::convolution_backward_weights(pd);
    SetArg(&prep->args[0], DNNL_ARG_SRC, false, d.src, pd.src_desc());
    SetArg(&prep->args[1], DNNL_ARG_DIFF_DST, false, d.dst, pd.diff_dst_desc());
    SetArg(&prep->args[2], DNNL_ARG_DIFF_WEIGHTS, true, d.weights,
           pd.diff_weights_desc());
    prep->scratch = pd.scratchpad_desc();
  });
}

bool DnnlConv::BackwardSupported(const DnnlConvParams& p, bool data,
                                 bool weights) {
  return (!data || impl_->EnsureBackwardData(p)) &&
         (!weights || impl_->EnsureBackwardWeights(p));
}

bool DnnlConv::BackwardData(const DnnlConvParams& p, const float* weights,
                            const float* ddst, float* dsrc) {
  Impl& im = *impl_;
  if (!im.EnsureBackwardData(p)) return false;
  im.Execute(im.backward_data, {weights, ddst, dsrc});
  return true;
}

bool DnnlConv::BackwardWeights(const DnnlConvParams& p, const float* src,
                               const float* ddst, float* dweights) {
  Impl& im = *impl_;
  if (!im.EnsureBackwardWeights(p)) return false;
  im.Execute(im.backward_weights, {src, ddst, dweights});
  return true;
}

#endif  // PAREX_WITH_DNNL

}  // namespace cpu
}  // namespace parex
