#!/usr/bin/env bash
# Runs UCC's own MPI test (ucc_test_mpi) with tutti's ucc.conf export and reads the score map UCC
# built for each team (UCC_LOG_LEVEL=debug prints every range with its init function): each probe
# size must run the exported algorithm, and a world the table never measured UCC's defaults.
#   tests/tuner/peers/check_ucc.sh UCC_PREFIX [conf]   (UCC_PREFIX/bin/ucc_test_mpi; mpirun in PATH;
#   conf: ucc.conf, or ucc-before-1.8.conf for a UCC older than 1.8)
# Run from the repository root.
prefix=${1:?usage: $0 UCC_PREFIX [ucc.conf|ucc-before-1.8.conf]}
conf=${2:-ucc.conf}
source "$(dirname "$0")/common.sh"
score_map() {  # ranks config-file: one rank's score map for the world team, "Collective: {a..b}:TL:score=fn ..."
  local test=("$prefix/bin/ucc_test_mpi" -c barrier -t world -M host)
  # only rank 0 logs (one app context of its own), so no other rank's lines cut into its map
  mpirun --allow-run-as-root --oversubscribe -x LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" \
    -x UCC_CONFIG_FILE="$2" -n 1 -x UCC_LOG_LEVEL=debug "${test[@]}" : -n $(($1 - 1)) "${test[@]}" 2>&1 |
    python3 -c '
import re, sys
pid, coll, out = None, None, []
for line in sys.stdin.buffer.read().decode(errors="replace").splitlines():
    m = re.search(r"\[[^:\]]+:\s*(\d+)\s*:\d+\]\s+(ucc_team|ucc_coll_score_map)\.c:\d+\s+UCC\s+INFO\s+(.*)$", line)
    if not m: continue
    if pid is None and "COLL_SCORE_MAP" in m.group(3): pid = m.group(1)
    if m.group(1) != pid: continue
    text = m.group(3)
    if "=====" in text and out: break
    if re.fullmatch(r"[A-Z][a-z_]*:", text.strip()): coll = text.strip()
    elif coll and "{" in text: out.append(coll + " " + text.strip())
print("\n".join(out))'
}
lookup() {  # score-map-file collective bytes: the init function UCC picks (first range holding it)
  python3 - "$@" <<'PY'
import re, sys
text, coll, size = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
def units(s):
    if s == "inf": return 1 << 64
    m = re.fullmatch(r"(\d+)([KMGT]?)", s)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}[m.group(2)]
for line in text.splitlines():
    if line.startswith(coll + ":"):
        for a, b, fn in re.findall(r"\{(\w+)\.\.(\w+)\}:\w+:\w+=(\w+)", line):
            if units(a) <= size <= units(b):
                print(fn); sys.exit(0)
print("none")
PY
}
status=0
check() {  # map collective bytes expected-init
  local got
  got=$(lookup "$1" "$2" "$3")
  printf '%s %s -> %s\n' "$2" "$3" "$got"
  [ "$got" = "$4" ] || { echo "FAIL: expected $4"; status=1; }
}
score_map 4 "$work/$conf" > "$work/map4"
score_map 4 /dev/null > "$work/default4"
score_map 2 "$work/$conf" > "$work/map2"
score_map 3 "$work/$conf" > "$work/map3"
score_map 3 /dev/null > "$work/default3"
check "$work/map4" Allreduce 2047 ucc_tl_ucp_allreduce_sra_knomial_init
check "$work/map4" Allreduce 2048 "$(lookup "$work/default4" Allreduce 2048)"     # direct: UCC's own
check "$work/map4" Allreduce 65535 "$(lookup "$work/default4" Allreduce 65535)"
if [ "$conf" = ucc.conf ]; then
  check "$work/map4" Allreduce 65536 ucc_tl_ucp_allreduce_ring_init
fi
check "$work/map4" Bcast 65535 ucc_tl_ucp_bcast_knomial_init
check "$work/map4" Bcast 65536 ucc_tl_ucp_bcast_sag_knomial_init
check "$work/map4" Alltoall 2051 ucc_tl_ucp_alltoall_bruck_init
check "$work/map4" Alltoall 2052 ucc_tl_ucp_alltoall_pairwise_init
check "$work/map4" Reduce_scatter 1019 ucc_tl_ucp_reduce_scatter_knomial_init
check "$work/map4" Reduce_scatter 1020 ucc_tl_ucp_reduce_scatter_ring_init
check "$work/map4" Allgather 1048576 ucc_tl_ucp_allgather_ring_init
check "$work/map2" Allreduce 8 ucc_tl_ucp_allreduce_dbt_init
check "$work/map2" Allreduce 1073741824 ucc_tl_ucp_allreduce_dbt_init
diff "$work/map3" "$work/default3" > /dev/null || { echo "FAIL: world 3 (not in the table) is not UCC's default map"; status=1; }
[ "$status" = 0 ] && echo PASS
exit "$status"
