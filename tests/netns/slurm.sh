#!/bin/bash
# srun --mpi=pmix on a throwaway one-node Slurm cluster: slurm.sh TESTS_EXE
# Starts its own munged (own key and socket), slurmctld and slurmd (own config, ports, spool and
# state directories under a temporary directory; nothing under /etc is read or written), runs 3
# ranks with every tutti rendezvous variable removed, and stops and removes all of it on exit,
# also on failure. The job must pass on every rank, and rank 0 must log that it found its store
# through PMIx. Skipped (77), saying why, when not root or without Slurm and MUNGE
# (tools/install-deps.sh installs slurmd, slurmctld, slurm-client and munge).
set -u
exe=${1:?tests executable}
skip() { echo "skipped: $*"; exit 77; }
[[ $(id -u) == 0 ]] || skip "needs root (slurmd)"
PATH=$PATH:/usr/sbin
for p in munged slurmctld slurmd srun sinfo; do
  command -v "$p" >/dev/null || skip "$p not found (tools/install-deps.sh installs slurmd slurmctld slurm-client munge)"
done
[[ -n $(ls /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix*.so /usr/lib*/slurm/mpi_pmix*.so 2>/dev/null) ]] ||
  skip "Slurm has no PMIx plugin (mpi_pmix) here"

dir=$(mktemp -d "${TMPDIR:-/tmp}/tutti-slurm.XXXXXX")
chmod 755 "$dir"
daemons=()
cleanup() {
  local p i
  # slurmd's step daemons finish the job's bookkeeping after srun returns: let them go first, so
  # that none is orphaned when slurmd stops.
  for i in $(seq 50); do [[ -n $(our_stepds) ]] || break; sleep 0.1; done
  for p in "${daemons[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${daemons[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$dir"
}
# This cluster's step daemons. slurmd forks them twice (their parent is init, not slurmd), so they
# are told by the configuration they inherit, this test's own file: by name alone we would wait on
# another cluster's (this test run beside itself from another build tree, or a real Slurm).
our_stepds() {
  local p
  for p in $(pgrep -x slurmstepd); do
    tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "SLURM_CONF=$dir/slurm.conf" && echo "$p"
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
  echo "slurm: FAILED: $*" >&2
  local f
  for f in "$dir"/*.log; do [[ -f $f ]] && { echo "--- ${f##*/}:" >&2; tail -n 30 "$f" >&2; }; done
  exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# MUNGE, Slurm's authentication: a key and a socket of this test's own.
head -c 1024 /dev/urandom >"$dir/munge.key"
chmod 400 "$dir/munge.key"
munged --foreground --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" 2>>"$dir/munged.log" &
daemons+=($!)

node=$(hostname -s)
mkdir -p "$dir/ctld" "$dir/spool" "$dir/tmp"
# Every fresh cluster would number its first job 1, and shared names follow from the job number:
# the PMIx plugin's /tmp/spmix_appdir_<uid>_<job>.<step> (TmpFS below moves it into $dir), and the
# shm transport's /dev/shm/tutti-<job id>.* (rank_info.hpp's job id holds the Slurm job's number).
# A random first number keeps them apart from another run's (Slurm's MaxJobId is 67043328).
first_job_id=$(( (RANDOM << 15 | RANDOM) % 60000000 + 1000 ))
: >"$dir/plugstack.conf"
cat >"$dir/slurm.conf" <<CONF
ClusterName=tutti-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=tutti Nodes=$node Default=YES MaxTime=10 State=UP
TmpFS=$dir/tmp
FirstJobId=$first_job_id
CONF
export SLURM_CONF=$dir/slurm.conf
for i in $(seq 50); do [[ -S $dir/munge.sock ]] && break; sleep 0.1; done
[[ -S $dir/munge.sock ]] || fail "munged did not start"
slurmctld -D -f "$SLURM_CONF" >>"$dir/slurmctld.log" 2>&1 &
daemons+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >>"$dir/slurmd.log" 2>&1 &
daemons+=($!)
for i in $(seq 100); do
  [[ $(timeout 5 sinfo -h -o %T 2>/dev/null) == idle* ]] && break
  sleep 0.3
done
[[ $(timeout 5 sinfo -h -o %T 2>/dev/null) == idle* ]] || fail "the node did not become idle"

log=$dir/job.log
env -u TUTTI_STORE_ADDR -u TUTTI_JOB_KEY -u TUTTI_JOB_KEY_FILE -u MASTER_ADDR -u MASTER_PORT TUTTI_LOG=info \
  timeout 180 srun --mpi=pmix -N 1 -n 3 --time=5 "$exe" --no-colors=true \
  --test-case='allreduce*algorithm::ring? *,barrier*algorithm::ring? *' >"$log" 2>&1 || { cat "$log" >&2; fail "the job failed"; }
[[ $(grep -c "Status: SUCCESS" "$log") == 3 ]] || { cat "$log" >&2; fail "not every rank reported success"; }
grep -qE "test cases: +0 [|]" "$log" && { cat "$log" >&2; fail "a rank ran no test case"; }
grep -qE "^\[tutti 0\] info: rendezvous through PMIx \(job slurm[^)]*\): store at [0-9.]+:[0-9]+ on " "$log" ||
  { cat "$log" >&2; fail "rank 0 did not log a PMIx rendezvous"; }
echo "slurm srun: passed"
