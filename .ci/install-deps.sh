#!/usr/bin/env bash
# Installs the Debian packages interopbench builds with, when any is missing. Safe to
# repeat; touches the network only when something is missing. The CUDA toolkit (with
# NCCL) is a prerequisite from NVIDIA, expected under /usr/local/cuda.
set -euo pipefail
packages=(cmake g++ make pkg-config ccache git libcli11-dev nlohmann-json3-dev libfmt-dev libhwloc-dev
          libudev-dev liburing-dev doctest-dev libopenmpi-dev openmpi-bin python3 chromium groff-base)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "error: the CUDA toolkit (nvcc) is not installed; install CUDA 12.4 or newer from NVIDIA" >&2
  exit 2
fi
