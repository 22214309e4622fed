#include "kernels/cpu/dnnl_matmul.h"

#include <string>
#include <vector>

#include "kernels/cpu/blas.h"
#include "kernels/cpu/skinny_gemm.h"

#ifdef PAREX_WITH_DNNL
#include <unordered_map>

#include "kernels/cpu/spatial/dnnl_conv_descs.h"
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace parex::cpu {

#ifndef PAREX_WITH_DNNL

struct DnnlConstantMatmul::Impl {};
DnnlConstantMatmul::DnnlConstantMatmul() : impl_(nullptr) {}
DnnlConstantMatmul::~DnnlConstantMatmul() = default;
bool DnnlConstantMatmul::Run(int64_t, int64_t, int64_t, bool, const float*,
                             const float*, float*, const float*, bool) {
  return false;
}

#else

using conv_descs::Engine;
using conv_descs::ThreadStream;

struct DnnlConstantMatmul::Impl {
  using memory = dnnl::memory;
  using Tag = memory::format_tag;

  // The shape the primitive was made for; `supported` false where oneDNN
  // offered only its reference code.
  bool made = false, supported = false;
  int64_t m = 0, k = 0, n = 0;
  bool trans_y = false;
  bool bias = false, relu = false;  // the epilogue
  dnnl::matmul primitive;
  memory x_mem, y_mem, packed_mem, out_mem, bias_mem;
  dnnl::reorder pack;
  std::vector<uint8_t> packed;
  const float* packed_from = nullptr;
  std::unordered_map<int, memory> args;
  // Few rows by a large matrix: SkinnyGemm's, the matrix packed once.
  bool skinny = false;
  SkinnyPanels panels;

  void Make() {
    made = true;
    supported = false;
    packed_from = nullptr;
    const memory::desc x = conv_descs::Plain({m, k}, Tag::ab);
    const memory::desc y =
        conv_descs::Plain({k, n}, trans_y ? Tag::ba : Tag::ab);
    const memory::desc out = conv_descs::Plain({m, n}, Tag::ab);
    dnnl::engine& engine = Engine();
    const memory::desc b = conv_descs::Plain({1, n}, Tag::ab);
    const memory::desc any = conv_descs::Plain({k, n}, Tag::any);
    dnnl::post_ops ops;
    if (relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0, 0);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::matmul::primitive_desc pd;
    try {
      pd =
          dnnl::matmul::primitive_desc(bias ? dnnl::matmul::desc(x, any, b, out)
                                            : dnnl::matmul::desc(x, any, out),
                                       attr, engine);
    } catch (const dnnl::error&) {
      return;
    }
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) return;
    primitive = dnnl::matmul(pd);
    x_mem = memory(x, engine, DNNL_MEMORY_NONE);
    y_mem = memory(y, engine, DNNL_MEMORY_NONE);
    out_mem = memory(out, engine, DNNL_MEMORY_NONE);
    packed.assign(pd.weights_desc().get_size(), 0);
    packed_mem = memory(pd.weights_desc(), engine, packed.data());
    pack = dnnl::reorder(y_mem, packed_mem);
    args = {{DNNL_ARG_SRC, x_mem},
            {DNNL_ARG_WEIGHTS, packed_mem},
            {DNNL_ARG_DST, out_mem}};
    if (bias) {
      bias_mem = memory(b, engine, DNNL_MEMORY_NONE);
      args[DNNL_ARG_BIAS] = bias_mem;
    }
    supported = true;
  }

  // Made for this shape and epilogue: SkinnyGemm's panels or oneDNN's
  // primitive (packed on the next run).
  void Prepare(int64_t rows, int64_t inner, int64_t cols, bool transposed,
               bool with_bias, bool with_relu) {
    m = rows;
    k = inner;
    n = cols;
    trans_y = transposed;
    bias = with_bias;
    relu = with_relu;
    skinny = SkinnyGemmAvailable() && SkinnyGemmFaster(m, k, n);
    if (skinny) {
      made = true;
      supported = true;
      packed_from = nullptr;
    } else {
      Make();
    }
  }

  void RunSkinny(const float* x, const float* y, float* out,
                 const float* with_bias) {
    if (packed_from != y) {
      panels.Pack(k, n, trans_y, y);
      packed_from = y;
    }
    SkinnyEpilogue epilogue;
    epilogue.bias = with_bias;
    epilogue.activation = relu ? 1 : 0;
    SkinnyGemm(m, x, panels, epilogue, out);
  }
};

DnnlConstantMatmul::DnnlConstantMatmul() : impl_(new Impl) {}
DnnlConstantMatmul::~DnnlConstantMatmul() { delete impl_; }

bool DnnlConstantMatmul::Run(int64_t m, int64_t k, int64_t n, bool trans_y,
                             const float* x, const float* y, float* out,
                             const float* bias, bool relu) {
  Impl& im = *impl_;
  if (m <= 0 || k <= 0 || n <= 0) return false;
  UseIntraOpThreads();
  const bool with_bias = bias != nullptr;
  if (!im.made || im.m != m || im.k != k || im.n != n ||
      im.trans_y != trans_y || im.bias != with_bias || im.relu != relu) {
    im.Prepare(m, k, n, trans_y, with_bias, relu);
  }
  if (!im.supported) return false;
  if (im.skinny) {
    im.RunSkinny(x, y, out, bias);
    return true;
  }
  dnnl::stream& stream = ThreadStream();
  if (im.packed_from != y) {
    im.y_mem.set_data_handle(const_cast<float*>(y));
    im.pack.execute(stream, im.y_mem, im.packed_mem);
    im.packed_from = y;
  }
  im.x_mem.set_data_handle(const_cast<float*>(x));
  im.out_mem.set_data_handle(out);
  if (with_bias) im.bias_mem.set_data_handle(const_cast<float*>(bias));
  im.primitive.execute(stream, im.args);
  stream.wait();
  return true;
}

#endif  // PAREX_WITH_DNNL

}  // namespace parex::cpu
