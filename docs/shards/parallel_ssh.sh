#!/bin/sh
# Run one experiment as N shards on lab machines over SSH with GNU parallel, bring the shards'
# folders home, and merge them into one campaign and report (docs/shards.md, recipe 1).
#
#   docs/shards/parallel_ssh.sh EXPERIMENT N HOST [HOST ...]
#
# EXPERIMENT is a path inside the netloop checkout, which every HOST has at the same path
# (NETLOOP_DIR). Each HOST runs one shard at a time (any shard: parallel hands the next one to the
# first machine free), so N may be larger than the number of hosts. Settings (environment):
#   NETLOOP_DIR  the checkout on every host           (default: this checkout's absolute path)
#   NETLOOP      the command there, from NETLOOP_DIR  (default: bin/netloop; 'sudo bin/netloop' for
#                links other than loopback, with passwordless sudo for it)
#   REMOTE_OUT   where the shards go on the hosts     (default: /tmp/netloop-shards-<date>-<time>)
#   LOCAL_OUT    where they come home                 (default: results/shards-<date>-<time>)
#   MERGED_OUT   where the merged campaign goes       (default: results; its path is printed)
#   SSH          the ssh command, for both parallel and rsync (default: ssh)
#   NETLOOP_RUN_ARGS more options of 'netloop run' (e.g. --quick, --transports tcp,udp)
set -eu
[ $# -ge 3 ] || { echo "usage: $0 EXPERIMENT N HOST [HOST ...]" >&2; exit 2; }
experiment=$1 count=$2
shift 2
here=$(cd "$(dirname "$0")/../.." && pwd)
NETLOOP_DIR=${NETLOOP_DIR:-$here}
NETLOOP=${NETLOOP:-bin/netloop}
stamp=$(date +%Y%m%d-%H%M%S)
REMOTE_OUT=${REMOTE_OUT:-/tmp/netloop-shards-$stamp}
LOCAL_OUT=${LOCAL_OUT:-results/shards-$stamp}
MERGED_OUT=${MERGED_OUT:-results}
SSH=${SSH:-ssh}
NETLOOP_RUN_ARGS=${NETLOOP_RUN_ARGS:-}
logins=$(printf '1/%s,' "$@")   # one job at a time per host

# 1. every shard, each on the next free host (a failed shard stops nothing: step 3 names it)
mkdir -p "$LOCAL_OUT"
seq 1 "$count" | parallel --ssh "$SSH" --sshlogin "${logins%,}" --line-buffer --tagstring 'shard {}' \
  --joblog "$LOCAL_OUT/joblog" \
  "cd '$NETLOOP_DIR' && $NETLOOP run --shard {}/$count --out '$REMOTE_OUT' $NETLOOP_RUN_ARGS '$experiment'" || true

# 2. the shards' folders home (each host holds the shards it ran; their names carry K and N;
#    LOCAL_OUT/joblog says which host ran which shard, and how it ended)
for host in "$@"; do
  rsync -a -e "$SSH" "$host:$REMOTE_OUT/" "$LOCAL_OUT/" || echo "parallel_ssh.sh: nothing fetched from $host" >&2
done

# 3. one campaign from this run's shards (refused, with the reason, if one is missing or does not fit)
"$here/bin/netloop" report --out "$MERGED_OUT" "$LOCAL_OUT"/*-shard*of"$count"-*
