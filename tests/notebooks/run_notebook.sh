#!/usr/bin/env bash
# Executes one notebook as `make test` does: Debian's Jupyter (/usr/bin/jupyter,
# not whatever python3 is first on PATH), headless matplotlib, outputs in a
# scratch dir. Installs the Debian packages the notebooks need when missing
# (same list as scripts/install_deps.sh test).
# Usage: run_notebook.sh NOTEBOOK.ipynb CAPPLAN_BIN OUT_DIR REPO_ROOT PYTHON_DIR
# (PYTHON_DIR: where the capplan Python module was built, build/python)
set -euo pipefail
nb=$1 bin=$2 out=$3 repo=$4 pydir=$5
need() {
  [ -x /usr/bin/jupyter ] && /usr/bin/python3 -c 'import nbclient, ipykernel, matplotlib, pandas' 2>/dev/null
}
if ! need; then
  pkgs="jupyter-nbconvert jupyter-core python3-nbclient python3-ipykernel python3-matplotlib python3-pandas"
  echo "run_notebook: installing missing Debian packages: $pkgs"
  SUDO=; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq --no-install-recommends $pkgs >/dev/null ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends $pkgs >/dev/null; }
  need || { echo "run_notebook: Jupyter still missing; run scripts/install_deps.sh test" >&2; exit 1; }
fi
rm -rf "$out" && mkdir -p "$out"
name=$(basename "$nb" .ipynb)
# pyenv or a venv first on PATH must not supply the kernel's python3.
export PATH=/usr/bin:/bin:$PATH
CAPPLAN_BIN=$bin CAPPLAN_PYTHON=$pydir CAPPLAN_NB_OUT=$out CAPPLAN_REPO=$repo PYDEVD_DISABLE_FILE_VALIDATION=1 \
  MPLBACKEND=Agg /usr/bin/jupyter nbconvert --to notebook --execute \
  --ExecutePreprocessor.timeout=600 --output-dir "$out" --output "$name.executed.ipynb" "$nb"
