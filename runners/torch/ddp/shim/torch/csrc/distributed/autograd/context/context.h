// Debian's libtorch-dev (1.13) ships c10d/reducer.hpp, which includes this header, but not
// distributed autograd's headers. The Reducer uses two names from it: the gradient callback type
// (checked against its own by a static_assert) and a shared pointer to a context it never
// dereferences outside libtorch. Declaring exactly those keeps the Reducer's layout as libtorch
// built it. On the include path only when LibTorch lacks the real header (CMakeLists.txt).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>

namespace torch::distributed::autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};

using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace torch::distributed::autograd
