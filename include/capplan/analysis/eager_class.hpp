// The classes of PyTorch's eager element-wise kernels, which reach different shares of the memory bandwidth: PyTorch's
// TensorIterator vectorises a kernel only when every operand is contiguous and of one dtype. A kernel's class: strided
// when an operand is a transposed view ([batch, heads, tokens, head_dim] of a projection's output), else broadcast when
// an operand broadcasts (a row's scale, a weight vector, the rotary table), else mixed dtype when its operands' dtypes
// differ (casts; fp32 + bf16), else contiguous; norm kernels and row sums are reductions. The catalog gives each its
// measured efficiency (efficiency.eager_elementwise); eager_kernels.hpp counts the kernels.
#pragma once

#include <array>
#include <cstddef>

namespace capplan {

enum class eager_class : std::size_t { contiguous, mixed_dtype, strided, broadcast, reduction };
inline constexpr std::size_t eager_classes = 5;
inline constexpr std::array<const char*, eager_classes> eager_class_names{"contiguous", "mixed_dtype", "strided", "broadcast",
                                                                          "reduction"};
// Every class named: the last enumerator closes the count and has its name.
static_assert(static_cast<std::size_t>(eager_class::reduction) + 1 == eager_classes &&
              eager_class_names[eager_classes - 1] != nullptr);

}  // namespace capplan
