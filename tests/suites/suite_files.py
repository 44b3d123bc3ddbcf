"""The test files of an installed package's test directory, for the suite scripts beside this one."""

import os
import subprocess


def test_files(python, package):
    """The `test_*.py` files under `package` (as `python` imports it), as paths relative to its
    directory, sorted."""
    root = subprocess.run([python, "-c", f"import {package} as t, os; print(os.path.dirname(t.__file__))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, files in os.walk(root) for f in files if f.startswith("test_") and f.endswith(".py"))
