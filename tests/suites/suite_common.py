"""What the suite scripts beside this one share: the test files of an installed package, and the
verdict a suite ends with."""

import os
import subprocess
import sys


def test_files(python, package):
    """The `test_*.py` files under `package` (as `python` imports it), as paths relative to its
    directory, sorted."""
    root = subprocess.run([python, "-c", f"import {package} as t, os; print(os.path.dirname(t.__file__))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, files in os.walk(root) for f in files if f.startswith("test_") and f.endswith(".py"))


def finish(name, known, unexpected, troubles, ok):
    """Prints each known failure (a line with its cause), each unexpected failure and each trouble,
    then `NAME SUITE PASSED` or `NAME SUITE FAILED`, and exits with that status."""
    for line in known:
        print(f"known: {line}")
    for u in unexpected:
        print(f"UNEXPECTED {u}")
    for t in troubles:
        print(f"TROUBLE {t}")
    print(f"{name} SUITE PASSED" if ok else f"{name} SUITE FAILED")
    sys.exit(0 if ok else 1)
