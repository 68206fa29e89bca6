"""scripts/check-tidy.py hands clang-tidy a compile database without precompiled-header flags.

clang-tidy cannot read GCC's .gch files (runners/torch precompiles <torch/torch.h>,
DLBENCH_TORCH_PCH), so check-tidy drops CMake's PCH flags, in either form CMake writes them, and
leaves every other flag (an -include of the project's own) as it was.
Usage: python3 check_tidy_test.py REPO_ROOT
"""
import importlib.util
import json
import os
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
spec = importlib.util.spec_from_file_location("check_tidy", os.path.join(ROOT, "scripts", "check-tidy.py"))
check_tidy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_tidy)

GCC = ("/usr/bin/c++ -DX=1 -I/r/src -O2 -g -Winvalid-pch -include "
       "/r/build/runners/torch/CMakeFiles/dlbench_torch_runner.dir/cmake_pch.hxx -std=c++17 -o a.o -c /r/a.cc")
CLANG = ("/usr/bin/clang++ -DX=1 -Winvalid-pch -Xclang -include-pch -Xclang /r/b/d/cmake_pch.hxx.pch "
         "-Xclang -include -Xclang /r/b/d/cmake_pch.hxx -std=c++17 -o a.o -c /r/a.cc")


class WithoutPch(unittest.TestCase):
    def test_gcc_command(self):
        self.assertEqual(check_tidy.PCH_FLAGS.sub("", GCC),
                         "/usr/bin/c++ -DX=1 -I/r/src -O2 -g -std=c++17 -o a.o -c /r/a.cc")

    def test_clang_command(self):
        self.assertEqual(check_tidy.PCH_FLAGS.sub("", CLANG), "/usr/bin/clang++ -DX=1 -std=c++17 -o a.o -c /r/a.cc")

    def test_arguments_keep_a_projects_own_include(self):
        args = ["c++", "-include", "/r/src/own.h", "-Winvalid-pch", "-include", "/r/b/cmake_pch.hxx", "-c", "a.cc"]
        self.assertEqual(check_tidy.arguments_without_pch(args), ["c++", "-include", "/r/src/own.h", "-c", "a.cc"])
        self.assertEqual(check_tidy.arguments_without_pch(CLANG.split()), check_tidy.PCH_FLAGS.sub("", CLANG).split())

    def test_database_is_written_with_every_entry(self):
        entries = [{"directory": "/r/build", "file": "/r/a.cc", "command": GCC},
                   {"directory": "/r/build", "file": "/r/b.cc", "arguments": ["c++", "-c", "/r/b.cc"]}]
        with tempfile.TemporaryDirectory() as folder:
            check_tidy.write_database_without_pch(entries, folder)
            with open(os.path.join(folder, "compile_commands.json"), encoding="utf-8") as f:
                written = json.load(f)
        self.assertEqual([e["file"] for e in written], ["/r/a.cc", "/r/b.cc"])
        self.assertNotIn("cmake_pch", written[0]["command"])
        self.assertEqual(written[1]["arguments"], ["c++", "-c", "/r/b.cc"])
        self.assertIn("cmake_pch", entries[0]["command"], "the build's own entries are left as they were")


if __name__ == "__main__":
    unittest.main()
