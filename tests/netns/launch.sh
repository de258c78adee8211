#!/usr/bin/env bash
# Multi-host scenarios on one machine: 2 hosts (network namespaces, lib.sh) of 2 ranks each
# (torchrun_4x1: 4 hosts of 1 rank).
#   launch.sh SCENARIO TESTS_EXE [MPIRUN]
# Scenarios:
#   torchrun   the conformance suite, ranks started with torchrun's variables (RANK, WORLD_SIZE,
#              LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and a TUTTI_JOB_KEY
#   torchrun_4x1  the same suite on 4 hosts of one rank each: every message crosses a link, and
#              hierarchical<...> runs with one rank per node
#   mpirun     the same ranks started by Open MPI's mpirun from host 0, reaching host 1 through an
#              rsh agent that enters its namespace; ranks from OMPI_COMM_WORLD_*, and NO rendezvous
#              variable: rank 0's store is found through PMIx (needs tutti::pmix; rank 0 logs it)
#   iface      the network both hosts share (eth1) is chosen over the decoy eth0 and over eth2,
#              shared on paper and ranked first but connecting nothing (the probe rejects it, and
#              rank 0 logs why); TUTTI_NET_IFACE=^eth1,eth2 leaves nothing shared: the error lists
#              every host's interfaces; TUTTI_NET_IFACE=eth2: the error says who cannot reach whom
#   wrong_key  a rank with another TUTTI_JOB_KEY is refused by the store, saying so
#   kill       rank 3 is SIGKILLed after a first allreduce; every survivor reports peer_lost naming
#              it, under ring and under hierarchical<direct, ring> (its node's loss seen by shm);
#              then rank 0, which serves the store, under ring: the survivors name it and are all
#              gone within seconds (no store call waits out TUTTI_TIMEOUT)
#   leave      rank 3 joins and returns at once (no error, no collective): the other ranks, on its
#              node (shm) and on the other host (UCX), get peer_lost naming it within seconds, and
#              every rank, rank 3 included, exits well before TUTTI_TIMEOUT
#   stall      rank 3 stopped by SIGSTOP after a first allreduce (continued 9 s later), then rank 3
#              skipping the second allreduce: with TUTTI_STALL_WARN=2 and TUTTI_TIMEOUT=6 ranks 0-2
#              log one line naming rank 3 missing (silent when stopped, alive when skipping) and
#              fail at 6 s, rank 3 when it runs again: all four with one verdict, word for word;
#              then rank 3 calling a broadcast where the others allreduce: a mismatch on every
#              rank within 3 s naming rank 3's broadcast, not a stall
# Every rank runs under `timeout`, and lib.sh removes the namespaces whatever happens.
source "$(dirname "$0")/lib.sh"
scenario=${1:?scenario}
exe=${2:?tests executable}
mpirun=${3:-}
per_rank_limit=${TUTTI_NETNS_RANK_LIMIT:-240}
export TUTTI_TIMEOUT=${TUTTI_TIMEOUT:-20}

hosts=2 ppn=2
[[ $scenario == torchrun_4x1 ]] && hosts=4 ppn=1
world=$((hosts * ppn))
netns_hosts "$hosts"
key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')

# start_rank R HOST EXTRA_ENV... -- ARGS...: rank R of $world on HOST, torchrun style, in the background.
pids=()
start_rank() {
  local r=$1 k=$2; shift 2
  local extra=()
  while [[ $1 != -- ]]; do extra+=("$1"); shift; done
  shift
  on_host "$k" env RANK="$r" WORLD_SIZE=$world LOCAL_RANK=$((r % ppn)) LOCAL_WORLD_SIZE=$ppn \
    MASTER_ADDR=10.213.1.1 MASTER_PORT=29500 TUTTI_JOB_KEY="$key" "${extra[@]}" \
    timeout "$per_rank_limit" "$exe" "$@" >"$netns_tmp/rank$r.log" 2>&1 &
  pids[$r]=$!
}
# wait_ranks: fills status[r] with each rank's exit status.
status=()
wait_ranks() {
  local r
  for r in "${!pids[@]}"; do
    status[$r]=0
    wait "${pids[$r]}" || status[$r]=$?
  done
}
all_ranks() { local r; for ((r = 0; r < world; r++)); do start_rank "$r" $((r / ppn)) "$@"; done; }

case $scenario in
  torchrun | torchrun_4x1)
    all_ranks -- --test-case-exclude='*failure*'
    wait_ranks
    for ((r = 0; r < world; r++)); do
      [[ ${status[$r]} == 0 ]] || fail "$scenario: rank $r exited ${status[$r]}"
      grep -q "Status: SUCCESS" "$netns_tmp/rank$r.log" || fail "$scenario: rank $r did not report success"
      grep -qE "test cases: +0 [|]" "$netns_tmp/rank$r.log" && fail "$scenario: rank $r ran no test case"
    done
    ;;
  iface)
    netns_dead_subnet
    all_ranks TUTTI_LOG=info -- --test-case='allreduce*<*algorithm::ring? tutti::transport*'
    wait_ranks
    for r in 0 1 2 3; do [[ ${status[$r]} == 0 ]] || fail "iface: rank $r exited ${status[$r]}"; done
    grep -E "eth1" "$netns_tmp/rank0.log" | grep -q "10.213.1." || fail "iface: rank 0 did not log eth1 (10.213.1.0/24) as the network"
    grep -qE "eth0|eth2" <(grep "info: network 10" "$netns_tmp/rank0.log") && fail "iface: the decoy eth0 or the dead eth2 was chosen"
    grep -q "network 10.213.0.0/24 skipped, not every host reaches the others on it" "$netns_tmp/rank0.log" ||
      fail "iface: rank 0 did not log why the dead eth2 subnet was skipped"
    pids=()
    all_ranks TUTTI_NET_IFACE=^eth1,eth2 -- --test-case='allreduce*<*algorithm::ring? tutti::transport*'
    wait_ranks
    for r in 0 1 2 3; do [[ ${status[$r]} != 0 ]] || fail "iface: rank $r succeeded with eth1 excluded"; done
    for want in h0 h1 10.213.10.1 10.213.11.1 TUTTI_NET_IFACE; do
      grep -q "$want" "$netns_tmp/rank0.log" || fail "iface: the error on rank 0 does not mention $want"
    done
    pids=()
    all_ranks TUTTI_NET_IFACE==eth2 TUTTI_NET_PROBE_TIMEOUT=1 -- --test-case='allreduce*<*algorithm::ring? tutti::transport*'
    wait_ranks
    for r in 0 1 2 3; do [[ ${status[$r]} != 0 ]] || fail "iface: rank $r succeeded over the dead eth2"; done
    grep -q "do not connect them" "$netns_tmp/rank0.log" || fail "iface: rank 0's error does not say eth2 connects nothing"
    grep -qE "h1/[^ ]* \(eth2\) could not reach h0/[^ ]* at 10.213.0.1: " "$netns_tmp/rank0.log" ||
      fail "iface: rank 0's error does not say h1 could not reach h0 on eth2"
    ;;
  wrong_key)
    export TUTTI_TIMEOUT=8  # ranks 0-2 wait for rank 3 until then
    started=$SECONDS
    for r in 0 1 2; do start_rank "$r" $((r / 2)) -- --test-case='allreduce*<*algorithm::ring? tutti::transport*'; done
    start_rank 3 1 TUTTI_JOB_KEY=another-jobs-key-0123456789abcdef -- --test-case='allreduce*<*algorithm::ring? tutti::transport*'
    wait_ranks
    [[ ${status[3]} != 0 ]] || fail "wrong_key: rank 3 joined with another key"
    grep -q "authentication with the tcp_store at 10.213.1.1:29500 failed" "$netns_tmp/rank3.log" ||
      fail "wrong_key: rank 3's error does not say its authentication failed"
    grep -q "authentication failed" "$netns_tmp/rank0.log" || fail "wrong_key: the server (rank 0) did not log the refused client"
    grep -q "another-jobs-key\|$key" "$netns_tmp"/rank*.log && fail "wrong_key: a key was printed"
    # The others learn of it from the store at once, not from their deadline (8 s) naming a key.
    for r in 0 1 2; do
      grep -q "refused by the job's store for a wrong TUTTI_JOB_KEY" "$netns_tmp/rank$r.log" ||
        fail "wrong_key: rank $r was not told that a rank was refused for its key"
    done
    ((SECONDS - started < 6)) || fail "wrong_key: the others took $((SECONDS - started)) s to fail (TUTTI_TIMEOUT=8)"
    ;;
  kill)
    for alg in '<tutti::algorithm::ring>' '*hierarchical*'; do
      pids=()
      all_ranks TUTTI_TEST_VICTIM=3 -- --test-case="*failure*$alg"
      wait_ranks
      [[ ${status[3]} == 137 ]] || fail "kill $alg: rank 3 exited ${status[3]}, expected 137 (SIGKILL)"
      for r in 0 1 2; do
        grep -q "survivor rank $r: peer_lost after" "$netns_tmp/rank$r.log" || fail "kill $alg: rank $r did not report peer_lost"
        [[ ${status[$r]} == 0 ]] || fail "kill $alg: survivor rank $r exited ${status[$r]} (its checks failed)"
      done
      grep -q "rank 3" <(grep -h "survivor rank" "$netns_tmp"/rank[012].log) || fail "kill $alg: no survivor named rank 3"
    done
    # Rank 0 serves the store: before, survivors sat in the transport's shutdown for TUTTI_TIMEOUT
    # retrying the dead store, and one blamed a live neighbour.
    pids=()
    started=$SECONDS
    all_ranks TUTTI_TEST_VICTIM=0 -- --test-case='*failure*<tutti::algorithm::ring>'
    wait_ranks
    [[ ${status[0]} == 137 ]] || fail "kill rank 0: it exited ${status[0]}, expected 137 (SIGKILL)"
    for r in 1 2 3; do
      [[ ${status[$r]} == 0 ]] || fail "kill rank 0: survivor rank $r exited ${status[$r]} (its checks failed)"
    done
    ((SECONDS - started < 12)) || fail "kill rank 0: the survivors took $((SECONDS - started)) s to exit (TUTTI_TIMEOUT=$TUTTI_TIMEOUT)"
    ;;
  stall)
    for mode in stop skip different; do
      pids=()
      all_ranks TUTTI_TEST_STALL="$mode 3" TUTTI_STALL_WARN=2 TUTTI_TIMEOUT=6 -- --test-case='*failure (stall)*'
      wait_ranks
      for r in 0 1 2 3; do
        [[ ${status[$r]} == 0 ]] || { cat "$netns_tmp/rank$r.log"; fail "stall $mode: rank $r exited ${status[$r]}"; }
      done
      if [[ $mode == different ]]; then  # a mismatch at once (failure_test.cpp checks its words), not a stall
        ! grep -q "warn: stall:" "$netns_tmp"/rank[0-3].log || fail "stall different: a mismatch was logged as a stall"
        grep -h "^stall rank" "$netns_tmp"/rank[0-3].log
        continue
      fi
      liveness=alive
      [[ $mode == stop ]] && liveness="silent for [0-9.]+ s \\(stopped, or its host unreachable\\)"
      for r in 0 1 2; do
        grep -qE "warn: stall: allreduce #2 has waited 2\.[0-9] s on rank $r; in it: ranks 0-2; missing: rank 3 \\(returned from allreduce #1 [0-9.]+ s ago, $liveness\\)" \
          "$netns_tmp/rank$r.log" || { cat "$netns_tmp/rank$r.log"; fail "stall $mode: rank $r did not log rank 3 as missing"; }
      done
      verdicts=$(grep -ho "the job stalled: .*; here: " "$netns_tmp"/rank[0-3].log | sort -u)
      [[ $(grep -c . <<<"$verdicts") == 1 ]] || { cat "$netns_tmp"/rank*.log; fail "stall $mode: the ranks' verdicts differ: $verdicts"; }
      grep -q "missing: rank 3 (returned from allreduce #1" <<<"$verdicts" || fail "stall $mode: the verdict does not name rank 3: $verdicts"
      grep -h "warn: stall:" "$netns_tmp/rank0.log" | head -1
      grep -h "^stall rank" "$netns_tmp"/rank[0-3].log
    done
    ;;
  leave)
    started=$SECONDS
    all_ranks TUTTI_TEST_LEAVER=3 -- --test-case='*failure (leave)*'
    wait_ranks
    for r in 0 1 2 3; do
      [[ ${status[$r]} == 0 ]] || { cat "$netns_tmp/rank$r.log"; fail "leave: rank $r exited ${status[$r]}"; }
    done
    for r in 0 1 2; do
      grep -q "other rank $r: peer_lost after .*rank 3" \
        "$netns_tmp/rank$r.log" || { cat "$netns_tmp/rank$r.log"; fail "leave: rank $r was not told that rank 3 left"; }
    done
    ((SECONDS - started < 12)) || fail "leave: the job took $((SECONDS - started)) s (TUTTI_TIMEOUT=$TUTTI_TIMEOUT)"
    ;;
  mpirun)
    [[ -n $mpirun && -x $mpirun ]] || skip "mpirun.openmpi not found"
    agent=$netns_tmp/agent.sh
    netns_rsh_agent "$agent"
    # No store address, no key: PMIx finds rank 0's store (bootstrap/pmix_rendezvous.hpp). Only the
    # test's deadline and log level travel with -x; env -u makes sure nothing else leaks in.
    on_host 0 env -u TUTTI_STORE_ADDR -u TUTTI_JOB_KEY -u TUTTI_JOB_KEY_FILE -u MASTER_ADDR -u MASTER_PORT \
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 TUTTI_TIMEOUT="$TUTTI_TIMEOUT" TUTTI_LOG=info \
      timeout "$per_rank_limit" "$mpirun" --host h0:2,h1:2 -np 4 --bind-to none \
      --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include eth1 --mca btl self,tcp \
      -x TUTTI_TIMEOUT -x TUTTI_LOG "$exe" --no-colors=true --test-case='allreduce*algorithm::ring? tutti::transport*,allgather*algorithm::ring? tutti::transport*' \
      >"$netns_tmp/mpirun.log" 2>&1 || fail "mpirun: the job failed"
    [[ $(grep -c "Status: SUCCESS" "$netns_tmp/mpirun.log") == 4 ]] || fail "mpirun: not every rank reported success"
    grep -qE "test cases: +0 [|]" "$netns_tmp/mpirun.log" && fail "mpirun: a rank ran no test case"
    grep -q "rendezvous through PMIx .*store at 10.213.1.1:[0-9]* on eth1" "$netns_tmp/mpirun.log" ||
      fail "mpirun: rank 0 did not log its PMIx rendezvous on eth1"
    ;;
  *) echo "unknown scenario '$scenario'" >&2; exit 2 ;;
esac
echo "netns $scenario: passed"
