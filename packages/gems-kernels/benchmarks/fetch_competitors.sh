#!/usr/bin/env bash
# Download the pinned competitor wheels (no dependencies) into .bench-wheels/ at the repository
# root, for run_h200.py to install on a GPU machine that has no network: carry ".bench-wheels".
# flag-gems imports sqlalchemy, whose wheels are built per Python version: fetch one for each
# version in BENCH_PYTHONS (run_h200.py installs only those the running Python can use).
# The model zoo's U-Net (zoo_steps.py) needs diffusers, which the GPU image lacks (it has
# transformers): its wheel and the two its import needs that the image lacks come along.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${1:-$here/../../../.bench-wheels}"
mkdir -p "$dest"
python3 -m pip download --quiet --no-deps --dest "$dest" liger-kernel==0.8.5 flag-gems==5.0.2 \
  diffusers==0.42.1 importlib_metadata==10.2.0 lazy_importer==0.1.0
for version in ${BENCH_PYTHONS:-3.11 3.12 3.13}; do
  python3 -m pip download --quiet --no-deps --only-binary=:all: --implementation cp \
    --python-version "$version" --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --dest "$dest" sqlalchemy==2.0.48
done
ls -l "$dest"
