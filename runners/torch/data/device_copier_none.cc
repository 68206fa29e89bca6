// device_copier.h for a LibTorch without CUDA: there is no device to copy to.
#include "data/device_copier.h"

namespace dlbench::torchrunner::data {

std::unique_ptr<DeviceCopier> MakeSideStreamCopier(int /*device_index*/) { return nullptr; }

}  // namespace dlbench::torchrunner::data
