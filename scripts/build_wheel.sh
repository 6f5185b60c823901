#!/usr/bin/env bash
# Builds the Python package as a wheel (pyproject.toml, scikit-build-core),
# installs it into a fresh virtual environment and runs one docstring's
# worth of calls against the installed copy, outside the source tree. Not
# part of `make test` (a cold build of the module takes minutes); run it
# after changing pyproject.toml or python/CMakeLists.txt.
# Usage: scripts/build_wheel.sh [WORK_DIR]   (default: a new temporary folder)
# Needs the Debian packages of `scripts/install_deps.sh build`, and PyPI for
# the pinned build tools.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d -t capplan-wheel-XXXXXX)}
mkdir -p "$WORK"
python3 -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
"$PY" -m pip install -q "scikit-build-core==0.11.6" "pybind11==3.0.1"
# No build isolation: the pinned tools above build it, and nothing else is
# fetched while building.
"$PY" -m pip wheel "$SRC" --no-build-isolation --no-deps -w "$WORK/dist" \
  -Cbuild-dir="$WORK/build"
"$PY" -m pip install -q --no-deps "$WORK"/dist/capplan-*.whl
cd "$WORK"
"$PY" - <<'PY'
import os
import capplan
here = os.path.dirname(capplan.__file__)
assert os.environ["CAPPLAN_DATA_DIR"] == os.path.join(here, "data"), os.environ.get("CAPPLAN_DATA_DIR")
c = capplan.capacity("kimi-k2.6", 8, tp=8, kv="fp8")
s = capplan.simulate(os.path.join(here, "data/scenarios/kimi-k2.6-kv-fp8.json"),
                     {"workload.concurrency": 4, "workload.num_requests": 8})
print(f"installed capplan from {here}: kv_capacity_tokens {c['kv_capacity_tokens']}, "
      f"output_throughput {s['output_throughput']:.1f} tok/s")
PY
echo "wheel: $(ls "$WORK"/dist/capplan-*.whl)"
