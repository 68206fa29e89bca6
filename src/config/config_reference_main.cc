// Prints the Markdown reference of the matrix file format, generated from the parameter registry:
//   build/bin/dlbench-config-reference > docs/config-reference.md
#include <cstdio>
#include <string>

#include "config/registry.h"

int main() {
  const std::string reference = dlbench::config::RenderConfigReference();
  std::fwrite(reference.data(), 1, reference.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
