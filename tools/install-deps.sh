#!/usr/bin/env bash
# Installs what building and testing tutti needs, and nothing twice: Debian packages through apt
# (only those missing), Python tools through pip (only those missing). Safe to run again.
set -euo pipefail

# openmpi-bin: the tests start ranks with mpirun too, to prove from_env() reads Open MPI's variables.
# libopenmpi-dev: tests/mpi compares every collective with Open MPI's (found through pkg-config ompi-c).
# libucx-dev: transport::ucx (ucx-utils: ucx_perftest, the peer between hosts in bench/).
# libssl-dev: tcp_store's HMAC-SHA256 handshake (libcrypto). libpmix-dev: rendezvous under mpirun/srun.
# iproute2: the network-namespace tests (two "hosts" joined by veth pairs); util-linux: unshare.
# clang-14 + libclang-rt-14-dev: the libFuzzer target for the store's frame parser.
# slurmd slurmctld slurm-client munge: a throwaway one-node Slurm cluster proves srun --mpi=pmix.
# libeigen3-dev: the Gaussian process of fusion::autotuned's Bayesian optimiser (tutti::eigen).
# matplotlib (PyPI): example 04 and bench/ draw their PNGs.
# zlib1g-dev dataset-fashion-mnist: example 04 reads Fashion-MNIST's gzipped IDX files (zlib).
# libyaml-cpp-dev: Determined-style experiment files, trainer::experiment_config (tutti::yaml).
# python3-torch libtorch-dev pybind11-dev: the torch.distributed backend (integrations/torch) and
# its tests, against Debian's torch 1.13 for /usr/bin/python3 (docs/pytorch.md for torch 2).
apt_packages=(g++ cmake make pkg-config libboost-dev doctest-dev openmpi-bin libopenmpi-dev
              libucx-dev ucx-utils libssl-dev libpmix-dev iproute2 util-linux clang-14 libclang-rt-14-dev
              slurmd slurmctld slurm-client munge libeigen3-dev zlib1g-dev dataset-fashion-mnist libyaml-cpp-dev
              python3-torch libtorch-dev pybind11-dev)
pip_packages=(conan matplotlib)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "tutti: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
for p in "${pip_packages[@]}"; do
  if ! "$python" -m pip show -q "$p" >/dev/null 2>&1; then
    echo "tutti: installing Python package: $p"
    "$python" -m pip install -q --disable-pip-version-check "$p"
  fi
done
# pyenv puts console scripts behind shims that exist only after a rehash.
command -v pyenv >/dev/null 2>&1 && pyenv rehash >/dev/null 2>&1 || true
echo "tutti: dependencies present"
