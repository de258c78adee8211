#!/usr/bin/env bash
# The soak (issue 23): jobs of 2 namespace hosts x 2 ranks (tests/netns/lib.sh, job.sh), one after
# another for SECONDS in all, each doing mixed work in turn — blocking 1 MiB allreduces, 12 tensors
# through the fusion engine, trainer steps (fault_worker.cpp, phase `mixed`) — for SEGMENT seconds.
# Every other job is ended early by a SIGKILL of a random rank at a random moment; the next job is
# its restart, as a launcher's relaunch loop would start it.
#   soak.sh SECONDS SEGMENT SAMPLE WORKER [OUT]
# Every SAMPLE seconds each rank's resident memory (VmRSS), descriptors and threads, and the job's
# shm segments, are read from /proc and /dev/shm (OUT/samples.csv when OUT is given). Asserts, per
# job and rank, from the first sample after warm-up (SEGMENT / 4) to the last one before the work
# ends (the kill, or the segment's end: a shutdown closes descriptors, seen in CI): descriptors and
# threads unchanged, RSS grown by at most 5 % + 4 MiB; no shm segment of the job left mapped by
# name after start-up; after each job none of its processes or segments left; a kill's survivors
# name the victim. Prints one line per job.
source "$(dirname "$0")/lib.sh"
total=${1:?seconds} segment=${2:?segment} sample=${3:?sample} worker=${4:?worker} out=${5:-}
# TUTTI_SOAK_TIMEOUT: the collectives' deadline (6 s; CI's soak, beside other tests, takes 30).
# TUTTI_FAULT_PACE_MS and TUTTI_CYCLE_TIME, when set, pace the work (fault_worker.cpp, CMakeLists.txt).
export TUTTI_TIMEOUT=${TUTTI_SOAK_TIMEOUT:-6} TUTTI_STALL_WARN=2 TUTTI_FAULT_SECONDS=$segment
per_rank_limit=$((segment + 60))
world=4
netns_hosts 2
source "$(dirname "$0")/job.sh"
csv=$netns_tmp/samples.csv
echo "seconds,job,rank,rss_kb,fds,threads,job_segments" >"$csv"

# sample_rank JOB R: "rss_kb,fds,threads" of rank R's process, or nothing once it is gone.
sample_rank() {
  local pid rss threads fds
  pid=$(pid_of "$1" "$2")
  [[ -n $pid && -r /proc/$pid/status ]] || return 0
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || return 0
  threads=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || return 0
  fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l) || return 0
  [[ -n $rss && -n $threads ]] && echo "$rss,$fds,$threads"
}

started=$SECONDS
declare -i job=0 kills=0
while ((SECONDS - started < total)); do
  waited=()
  start_job "$job" mixed
  wait_ready "$job" || fail "job $job: not every rank became ready"
  ready=$SECONDS
  id=$(job_of "$job")
  victim=-1 kill_at=-1 work_end=$((ready - started + segment - 1))  # samples after it see the shutdown
  if ((job % 2 == 1)); then
    victim=$((RANDOM % world))
    kill_at=$((segment / 4 + 1 + RANDOM % (segment / 2 + 1)))  # after the warm-up's first sample
  fi
  # Sample until every rank has ended (bounded by the ranks' own limit).
  while :; do
    alive=0
    for ((r = 0; r < world; r++)); do kill -0 "${pids[$r]}" 2>/dev/null && alive=1; done
    ((alive)) || break
    segs=$(ls /dev/shm | grep -cF "tutti-$id" || true)
    for ((r = 0; r < world; r++)); do
      s=$(sample_rank "$job" "$r")
      [[ -n $s ]] && echo "$((SECONDS - started)),$job,$r,$s,$segs" >>"$csv"
    done
    if ((victim >= 0 && kill_at >= 0 && SECONDS - ready >= kill_at)); then
      kill -KILL "$(pid_of "$job" "$victim")" 2>/dev/null || true
      kill_at=-1 kills+=1 work_end=$((SECONDS - started))
    fi
    sleep "$sample"
  done
  wait_job

  # This job's samples: per rank, warm-up's end to the last one.
  verdict=$(awk -F, -v job="$job" -v warm=$((ready - started + segment / 4)) -v end="$work_end" '
    $2 == job && $1 >= warm && $1 < end { r = $3
      if (!(r in rss0)) { rss0[r] = $4; fds0[r] = $5; thr0[r] = $6; n[r] = 0 }
      rss1[r] = $4; fds1[r] = $5; thr1[r] = $6; n[r]++; if ($7 > segs) segs = $7 }
    END { bad = ""; line = ""
      for (r in rss0) {
        line = line sprintf(" r%s: rss %d->%d KiB fds %d->%d threads %d->%d (%d samples);", r, rss0[r], rss1[r], fds0[r], fds1[r], thr0[r], thr1[r], n[r])
        if (fds1[r] != fds0[r] || thr1[r] != thr0[r] || rss1[r] > rss0[r] * 1.05 + 4096) bad = bad " rank " r
      }
      if (segs > 0) bad = bad " segments named after start-up"
      print (bad == "" ? "flat" : "GROWS:" bad) ":" line }' "$csv")
  killed=""
  ((victim < 0)) || killed=", rank $victim killed"
  report="job $job ($((SECONDS - ready)) s$killed): $verdict"
  echo "$report"
  [[ -n $out ]] && mkdir -p "$out" && echo "$report" >>"$out/summary.txt"
  [[ $verdict == flat* ]] || fail "job $job: $verdict"
  for ((r = 0; r < world; r++)); do
    if ((r == victim)); then
      [[ ${status[$r]} == 137 ]] || fail "job $job: the victim, rank $r, exited ${status[$r]}"
    elif ((victim >= 0)); then
      [[ $(outcome "$job" "$r") == peer_lost && $(line "$job" "$r") == *" peer=$victim "* ]] ||
        fail "job $job: rank $r did not name rank $victim lost: $(line "$job" "$r")"
    else
      [[ $(outcome "$job" "$r") == ok ]] || fail "job $job: rank $r: $(line "$job" "$r")"
    fi
  done
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && fail "job $job: a process of the job is still there"; done
  ls /dev/shm | grep -qF "tutti-$id" && fail "job $job: shm segments left"
  job+=1
done
[[ -n $out ]] && cp "$csv" "$out/samples.csv"
echo "soak: $job jobs in $((SECONDS - started)) s, $kills killed, every job flat"
