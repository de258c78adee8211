#!/usr/bin/env bash
# Installs what the peer comparison needs, and nothing twice: the Debian packages listed in
# requirements-apt.txt (only those missing) and the Python packages in requirements-pip.txt
# (only those missing). Safe to run again. Open MPI and MPICH coexist: each keeps its own
# suffixed wrappers (mpicc.openmpi, mpirun.mpich, ...), which build.sh and compare.py use.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

read_list() { grep -v -e '^[[:space:]]*#' -e '^[[:space:]]*$' "$1"; }
mapfile -t apt_packages < <(read_list "$here/requirements-apt.txt")
mapfile -t pip_packages < <(read_list "$here/requirements-pip.txt")

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "peers: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  # With recommends: openmpi-bin recommends the ssh client that Open MPI's launcher insists on
  # finding even for a single-host job. This is the set the numbers were measured with.
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
for p in "${pip_packages[@]}"; do
  if ! "$python" -m pip show -q "$p" >/dev/null 2>&1; then
    echo "peers: installing Python package: $p"
    "$python" -m pip install -q --disable-pip-version-check "$p"
  fi
done
echo "peers: dependencies present"
