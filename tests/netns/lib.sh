# Several hosts on one machine, for the multi-host tests (sourced, not run).
#
# Each "host" is a network namespace with its own hostname (unshare --uts), joined to the others by
# veth pairs. Addresses are private (10.213.0.0/16) and exist only inside the namespaces made here;
# nothing is sent anywhere but between them. Everything made is removed on exit, also on failure
# or interruption (trap). Needs root, `ip netns` (iproute2) and `unshare` (util-linux); otherwise
# the test is skipped (exit 77) saying what is missing.
#
#   netns_hosts N             makes hosts h0..h(N-1), each with eth1 (10.213.1.(k+1)/24) plugged
#                              into one bridge (a "switch" namespace), plus a decoy eth0 whose
#                              subnet no other host shares (10.213.(10+k).1/24): interface
#                              detection must not pick it.
#   netns_dead_subnet          gives every host an eth2 in one subnet, 10.213.0.(k+1)/24, that
#                              connects nothing (a veth whose peer stays on the same host): shared
#                              on paper and ranked before eth1, so only probing can reject it
#   on_host K CMD...          runs CMD on host K (its namespace, hostname hK)
#   shape_links RATE          tc tbf RATE on every host's eth1 (and the switch side)
#   netns_rsh_agent FILE      Open MPI's rsh agent for the hosts (mpirun --mca plm_rsh_agent FILE)
set -euo pipefail

skip() { echo "skipped: $*"; exit 77; }
[[ $(id -u) == 0 ]] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "iproute2's ip not found (tools/install-deps.sh installs iproute2)"
command -v unshare >/dev/null || skip "unshare not found (util-linux)"

netns_tag="tt$$"          # unique per test process: namespaces and links of parallel tests never collide
netns_names=()
netns_count=0
netns_tmp=$(mktemp -d "${TMPDIR:-/tmp}/tutti-netns.XXXXXX")

netns_cleanup() {
  local ns
  trap '' INT TERM  # a second signal (timeout(1) forwards its own, say) must not cut the cleanup short
  for ns in "${netns_names[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  [[ -n ${TUTTI_NETNS_KEEP_LOGS:-} ]] && mkdir -p "$TUTTI_NETNS_KEEP_LOGS" && cp "$netns_tmp"/*.log "$TUTTI_NETNS_KEEP_LOGS"/ 2>/dev/null
  rm -rf "$netns_tmp"
}
trap netns_cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAIL: $*" >&2
  local f
  for f in "$netns_tmp"/*.log; do [[ -f $f ]] && { echo "--- ${f##*/}:" >&2; tail -n 40 "$f" >&2; }; done
  exit 1
}

ns_of() { echo "${netns_tag}h$1"; }

netns_hosts() {
  local n=$1 k sw="${netns_tag}sw"
  ip netns add "$sw" 2>/dev/null || skip "cannot create network namespaces here (ip netns add failed)"
  netns_names+=("$sw")
  netns_count=$n
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  for ((k = 0; k < n; k++)); do
    local ns; ns=$(ns_of "$k")
    ip netns add "$ns"
    netns_names+=("$ns")
    ip -n "$ns" link set lo up
    # The shared network: hK's eth1 <-> port pK on the switch's bridge.
    ip link add "${netns_tag}e$k" type veth peer name "${netns_tag}p$k"
    ip link set "${netns_tag}e$k" netns "$ns"
    ip link set "${netns_tag}p$k" netns "$sw"
    ip -n "$ns" link set "${netns_tag}e$k" name eth1
    ip -n "$ns" addr add "10.213.1.$((k + 1))/24" dev eth1
    ip -n "$ns" link set eth1 up
    ip -n "$sw" link set "${netns_tag}p$k" master br0
    ip -n "$sw" link set "${netns_tag}p$k" up
    # The decoy: eth0, up, with a subnet of its own. Its name sorts first, so a detector that
    # ignored the subnets would take it.
    netns_dead_end "$k" eth0 "10.213.$((10 + k)).1/24" d
  done
}

# netns_dead_end K NAME CIDR TAG: on host K an interface NAME with address CIDR, up, that reaches
# nothing (a veth pair with both ends on host K; TAG keeps the pair's temporary names unique).
netns_dead_end() {
  local k=$1 name=$2 cidr=$3 tag=$4 ns; ns=$(ns_of "$1")
  ip link add "${netns_tag}${tag}a$k" type veth peer name "${netns_tag}${tag}b$k"
  ip link set "${netns_tag}${tag}a$k" netns "$ns"
  ip link set "${netns_tag}${tag}b$k" netns "$ns"
  ip -n "$ns" link set "${netns_tag}${tag}a$k" name "$name"
  ip -n "$ns" addr add "$cidr" dev "$name"
  ip -n "$ns" link set "$name" up
  ip -n "$ns" link set "${netns_tag}${tag}b$k" up
}

netns_dead_subnet() {
  local k
  for ((k = 0; k < netns_count; k++)); do netns_dead_end "$k" eth2 "10.213.0.$((k + 1))/24" u; done
}

# on_host K CMD...: CMD in host K's namespace with hostname hK (so node ids differ per host).
on_host() {
  local k=$1; shift
  ip netns exec "$(ns_of "$k")" unshare --uts sh -c 'hostname "$0"; exec "$@"' "h$k" "$@"
}

# netns_rsh_agent FILE: writes Open MPI's rsh agent there ("agent [options] HOST COMMAND..."): COMMAND
# runs in HOST's namespace with hostname HOST, so `mpirun --host h0:2,h1:2 --mca plm_rsh_agent FILE`
# starts its daemons on the namespace hosts.
netns_rsh_agent() {
  cat >"$1" <<AGENT
#!/bin/bash
while [[ \$1 == -* ]]; do shift; done
host=\$1; shift
exec ip netns exec "${netns_tag}\$host" unshare --uts sh -c 'hostname "\$0"; eval "\$1"' "\$host" "\$*"
AGENT
  chmod +x "$1"
}

shape_links() {
  local rate=$1 k
  for ((k = 0; k < netns_count; k++)); do
    ip netns exec "$(ns_of "$k")" tc qdisc replace dev eth1 root tbf rate "$rate" burst 1mbit latency 50ms
    ip netns exec "${netns_tag}sw" tc qdisc replace dev "${netns_tag}p$k" root tbf rate "$rate" burst 1mbit latency 50ms
  done
}
