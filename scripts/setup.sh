#!/usr/bin/env bash
# Installs what rankmig needs on a Debian machine, only what is missing.
# Idempotent and quiet when everything is already there. Called by scripts/demo.sh
# and scripts/test.sh (the two README commands) and by .ci/run.
set -euo pipefail

PACKAGES=(pkg-config libhwloc-dev hwloc libopenmpi-dev openmpi-bin libclang-dev libudev-dev gfortran libxxhash-dev scotch)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >/dev/null
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust (https://rustup.rs) first" >&2
  exit 1
fi
