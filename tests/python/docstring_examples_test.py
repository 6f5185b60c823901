#!/usr/bin/env python3
"""Every example in `import capplan`'s docstrings runs and prints what it
shows (doctest). The examples run in the order of capplan.__all__ after the
module's own, sharing one namespace and one scratch folder (so `run1` made
by simulate's example is read by requests_frame's), with the source tree's
scenarios/, tests/, calibrate/ and validation/ linked into that folder as a
user's checkout would have them. Examples that make DataFrames are skipped
without pandas, and say so.

Usage: docstring_examples_test.py SOURCE_DIR PYTHON_DIR OUT_DIR
Exit 0 when every example passes, 1 otherwise; 77 (skipped) when the
module is not built.
"""
import doctest
import importlib.util
import json
import os
import shutil
import sys

SRC, PYDIR, OUT = (os.path.abspath(a) for a in sys.argv[1:4])
LINKED = ["scenarios", "tests", "calibrate", "validation"]


def have_pandas():
    return importlib.util.find_spec("pandas") is not None


def main():
    if not os.path.exists(os.path.join(PYDIR, "capplan", "__init__.py")):
        print(f"skipped: no capplan package in {PYDIR}")
        return 77
    sys.path.insert(0, PYDIR)
    import capplan

    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    for d in LINKED:
        os.symlink(os.path.join(SRC, d), os.path.join(OUT, d))
    os.chdir(OUT)
    names = ["capplan"] + list(capplan.__all__)
    objects = [capplan] + [getattr(capplan, n) for n in capplan.__all__]
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs = {"capplan": capplan, "json": json, "os": os}
    examples = skipped = 0
    for name, obj in zip(names, objects):
        text = obj.__doc__ or ""
        test = parser.get_doctest(text, globs, name, capplan.__file__, 0)
        if not test.examples:
            print(f"FAIL {name}: its docstring has no example")
            runner.failures += 1
            continue
        # PandasMissing's own example shows both cases.
        frames = any("_frame(" in e.source for e in test.examples) and name != "PandasMissing"
        if frames and not have_pandas():
            print(f"skipped {name}: pandas is not installed")
            skipped += 1
            continue
        runner.run(test, clear_globs=False)
        globs.update(test.globs)  # a DocTest runs in a copy
        examples += len(test.examples)
    failed = runner.failures
    print(f"{examples} examples in {len(names) - skipped} docstrings, {failed} failed, "
          f"{skipped} docstrings skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
