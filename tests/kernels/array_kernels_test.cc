// Tensor arrays (kernels/cpu/array_kernels.cc): write_to_array grows the
// array and copies, read_from_array and lod_array_length read it back,
// tensor_array_to_tensor concatenates or stacks with each element's extent;
// a variable declared as an array that nothing wrote reads as empty; bad
// indices and elements that do not join are named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/ir/validate.h"
#include "kernels/device_context.h"
#include "kernels/op_runner.h"

namespace parex {
namespace {

using ::testing::HasSubstr;

Tensor Floats(const Dims& dims, float start) {
  Tensor t(DType::kFP32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + i;
  return t;
}

Tensor Index(int64_t i) {
  Tensor t(DType::kInt64, {1});
  t.data<int64_t>()[0] = i;
  return t;
}

struct ArrayProgram {
  Program program;
  Scope scope;
  CpuDeviceContext device;
  Block& block = program.global_block();

  ArrayProgram() {
    block.Var("arr")->SetType(proto::VarType::LOD_TENSOR_ARRAY);
    for (const char* name : {"x", "i", "out", "len", "index"}) {
      block.Var(name);
      scope.Var(name);
    }
  }
  void Set(const std::string& name, Tensor t) {
    *scope.Var(name)->GetMutableTensor() = std::move(t);
  }
  Status Run(const std::string& type, std::vector<std::string> ins,
             std::vector<std::string> outs, void (*attrs)(OpDesc*) = nullptr) {
    OpDesc* op = block.AppendOp(type);
    for (size_t k = 0; k + 1 < ins.size(); k += 2) {
      op->SetInput(ins[k], {ins[k + 1]});
    }
    for (size_t k = 0; k + 1 < outs.size(); k += 2) {
      op->SetOutput(outs[k], {outs[k + 1]});
    }
    if (attrs != nullptr) attrs(op);
    return RunOp(*op, &scope, &device);
  }
  Status Write(float start, int64_t at) {
    Set("x", Floats({2, 3}, start));
    Set("i", Index(at));
    return Run("write_to_array", {"X", "x", "I", "i"}, {"Out", "arr"});
  }
  int64_t Length() {
    EXPECT_TRUE(Run("lod_array_length", {"X", "arr"}, {"Out", "len"}).ok());
    return scope.FindVar("len")->GetTensor()->data<int64_t>()[0];
  }
};

TEST(ArrayKernelsTest, WriteReadLengthAndJoin) {
  ArrayProgram a;
  EXPECT_EQ(a.Length(), 0);  // declared, never written: empty
  ASSERT_TRUE(a.Write(0, 0).ok());
  ASSERT_TRUE(a.Write(100, 2).ok());  // grows past a hole
  EXPECT_EQ(a.Length(), 3);
  ASSERT_TRUE(a.Write(10, 1).ok());
  // The element is a copy: overwriting x leaves it.
  a.Set("x", Floats({2, 3}, -5));
  a.Set("i", Index(1));
  ASSERT_TRUE(
      a.Run("read_from_array", {"X", "arr", "I", "i"}, {"Out", "out"}).ok());
  const Tensor& read = *a.scope.FindVar("out")->GetTensor();
  EXPECT_EQ(read.dims(), (Dims{2, 3}));
  EXPECT_EQ(read.data<float>()[4], 14);

  ASSERT_TRUE(a.Run("tensor_array_to_tensor", {"X", "arr"},
                    {"Out", "out", "OutIndex", "index"},
                    [](OpDesc* op) {
                      op->SetAttr<int>("axis", 1);
                      op->SetAttr<bool>("use_stack", false);
                    })
                  .ok());
  const Tensor& cat = *a.scope.FindVar("out")->GetTensor();
  ASSERT_EQ(cat.dims(), (Dims{2, 9}));
  // Row 1: element 0's [3, 4, 5], element 1's [13, 14, 15], element 2's.
  const std::vector<float> row1(cat.data<float>() + 9, cat.data<float>() + 18);
  EXPECT_EQ(row1, (std::vector<float>{3, 4, 5, 13, 14, 15, 103, 104, 105}));
  const Tensor& index = *a.scope.FindVar("index")->GetTensor();
  EXPECT_EQ(std::vector<int>(index.data<int32_t>(), index.data<int32_t>() + 3),
            (std::vector<int>{3, 3, 3}));

  ASSERT_TRUE(a.Run("tensor_array_to_tensor", {"X", "arr"},
                    {"Out", "out", "OutIndex", "index"},
                    [](OpDesc* op) {
                      op->SetAttr<int>("axis", -1);
                      op->SetAttr<bool>("use_stack", true);
                    })
                  .ok());
  const Tensor& stacked = *a.scope.FindVar("out")->GetTensor();
  ASSERT_EQ(stacked.dims(), (Dims{2, 3, 3}));
  // stacked[1][2][k] = element k's [1][2].
  EXPECT_EQ(stacked.data<float>()[15], 5);
  EXPECT_EQ(stacked.data<float>()[16], 15);
  EXPECT_EQ(stacked.data<float>()[17], 105);
  EXPECT_EQ(a.scope.FindVar("index")->GetTensor()->data<int32_t>()[2], 1);
}

TEST(ArrayKernelsTest, BadIndicesAndElementsAreNamed) {
  ArrayProgram a;
  Status s = a.Write(0, -1);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("array index -1"));
  s = a.Write(0, int64_t{1} << 40);  // a crafted index allocates nothing
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("write_to_array"));
  ASSERT_TRUE(a.Write(0, 0).ok());
  a.Set("i", Index(3));
  s = a.Run("read_from_array", {"X", "arr", "I", "i"}, {"Out", "out"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("has no element 3 (length 1)"));
  // An element of another shape does not stack; a hole does not join.
  a.Set("x", Floats({2, 4}, 0));
  a.Set("i", Index(1));
  ASSERT_TRUE(
      a.Run("write_to_array", {"X", "x", "I", "i"}, {"Out", "arr"}).ok());
  s = a.Run("tensor_array_to_tensor", {"X", "arr"}, {"Out", "out"},
            [](OpDesc* op) { op->SetAttr<bool>("use_stack", true); });
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(),
              HasSubstr("element 1 is fp32[2,4], element 0 fp32[2,3]"));
  ASSERT_TRUE(a.Write(0, 3).ok());
  s = a.Run("tensor_array_to_tensor", {"X", "arr"}, {"Out", "out"},
            [](OpDesc* op) { op->SetAttr<int>("axis", 1); });
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("element 2 of the array is empty"));
  // Elements with no rows join into an empty tensor (no division by 0).
  ArrayProgram empty;
  empty.Set("x", Floats({0, 3}, 0));
  empty.Set("i", Index(0));
  ASSERT_TRUE(
      empty.Run("write_to_array", {"X", "x", "I", "i"}, {"Out", "arr"}).ok());
  s = empty.Run("tensor_array_to_tensor", {"X", "arr"}, {"Out", "out"},
                [](OpDesc* op) { op->SetAttr<int>("axis", 1); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(empty.scope.FindVar("out")->GetTensor()->dims(), (Dims{0, 3}));
  a.Set("i", Tensor(DType::kFP32, {1}));
  s = a.Run("read_from_array", {"X", "arr", "I", "i"}, {"Out", "out"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("not int64 or int32"));
}

// An op that reads tensors is refused an array (never handed a null
// tensor), and an array op a tensor where it wants an array.
TEST(ArrayKernelsTest, ArraysAndTensorsAreNotMixedUp) {
  ArrayProgram a;
  ASSERT_TRUE(a.Write(0, 0).ok());
  Status s = a.Run("relu", {"X", "arr"}, {"Out", "out"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'arr', a tensor array"));
  s = a.Run("tensor_array_to_tensor", {"X", "x"}, {"Out", "out"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("array 'x' is empty"));
}

}  // namespace
}  // namespace parex
