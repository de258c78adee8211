#!/bin/bash
# ucx_perftest tag_bw one way and both ways at once between 2 namespace hosts at 1gbit
cd /work/main
source tests/netns/lib.sh
netns_hosts 2
shape_links 1gbit
S=${S:-4194304} N=${N:-40}
one() {  # one SERVER_HOST CLIENT_HOST PORT OUT
  on_host $1 env UCX_TLS=tcp UCX_NET_DEVICES=eth1 timeout 60 ucx_perftest -p $3 >/dev/null 2>&1 &
  sleep 0.5
  on_host $2 env UCX_TLS=tcp UCX_NET_DEVICES=eth1 timeout 60 ucx_perftest 10.213.1.$(( $1 + 1 )) -p $3 -t tag_bw -s $S -n $N > $4 2>&1
}
one 1 0 13337 /work/exp21/uni.txt
echo "one way:"; grep Final /work/exp21/uni.txt
one 1 0 13338 /work/exp21/bi-a.txt & one 0 1 13339 /work/exp21/bi-b.txt & wait
echo "both ways at once:"; grep Final /work/exp21/bi-a.txt /work/exp21/bi-b.txt
