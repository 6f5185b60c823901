#!/usr/bin/env bash
# The default planning job (`make run`) on the shipped defaults.
set -euo pipefail
BUILD=${1:-build}
CAPPLAN="$BUILD/capplan"
echo "== KV capacity of the shipped model cards on 8x H200 (SGLang defaults) =="
"$CAPPLAN" capacity --table --gpus 8 --tp 8
