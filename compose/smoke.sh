#!/bin/bash
# The container smoke test (issue 32; CI does not run it): builds the images, starts the stack
# for two domains plus tod/live with HOST networking only, runs a sharded job with automatic
# claims (two workers, --shard auto/2), restarts a tool service mid-run, SIGTERMs a worker and
# starts it again, merges; then runs the same tasks as leases (a run service, workers holding 8
# episodes each, one SIGKILLed while it holds leases, a third joining mid-run) and compares
# both runs with a local `sopgym run` of the same tasks. Prints its figures as one JSON object
# at the end and exits non-zero if a check fails.
#
#   python3 -m venv .venv && .venv/bin/pip install -e .   # the local run's Python
#   compose/build-base.sh        # once, where no image registry is reachable (docs/deploy.md)
#   PYTHON=.venv/bin/python compose/smoke.sh     # SKIP_BUILD=1 reuses the images; KEEP=1
#                                # leaves the stack up; BUILD_DOCKER=/usr/bin/docker where the
#                                # docker client has no buildx (Debian's docker.io has BuildKit)
#
# Settings (environment): DOCKER (the client that runs containers, default docker),
# BUILD_DOCKER (one that builds with BuildKit, default $DOCKER), SOPGYM_TAG (default smoke),
# DOMAINS (default "patient_intake dangerous_goods tod/live"), LIMIT (tasks per domain, 40),
# PORT_BASE (18100: the loopback ports used are PORT_BASE..PORT_BASE+30), WORK (a scratch
# folder; default a new one under /tmp), PYTHON (a Python with sopgym, for the local run; a
# relative path is taken from where the script is started). A missing prerequisite (sopgym in
# PYTHON, the daemon, the base image, a client that builds with BuildKit) stops it at once
# with exit status 2, before anything is built.
# Containers bind 127.0.0.1 only; no bridge network is created or used.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DOCKER=${DOCKER:-docker}
BUILD_DOCKER=${BUILD_DOCKER:-$DOCKER}
TAG=${SOPGYM_TAG:-smoke}
DOMAINS=${DOMAINS:-"patient_intake dangerous_goods tod/live"}
LIMIT=${LIMIT:-40}
BASE=${PORT_BASE:-18100}
PYTHON=${PYTHON:-python3}
case "$PYTHON" in  # a relative path (.venv/bin/python) still names it after the script cd's
    */*) if dir=$(cd "$(dirname "$PYTHON")" 2> /dev/null && pwd); then PYTHON="$dir/${PYTHON##*/}"; fi ;;
esac
WORK=${WORK:-$(mktemp -d /tmp/sopgym-smoke.XXXXXX)}
PREFIX=sopgym-smoke
RUN=smoke-$(date +%Y%m%d-%H%M%S)
SHARDS=2
USER_PORT=$((BASE + 10))
MODEL_PORT=$((BASE + 11))
GATEWAY_PORT=$((BASE + 12))
read -r -a DOMAIN_LIST <<< "$DOMAINS"
mkdir -p "$WORK"
FIGURES="$WORK/figures.env"
: > "$FIGURES"

say() { printf '[smoke %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
refuse() { printf 'smoke: %s\n' "$*" >&2; exit 2; }  # a setup mistake: said before any work
figure() { printf '%s=%s\n' "$1" "$2" >> "$FIGURES"; say "$1 = $2"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
slug() { echo "$1" | tr '_/' '--'; }
containers() { $DOCKER ps -aq --filter "name=^${PREFIX}-" ; }

cleanup() {
    if [ "${KEEP:-0}" = 1 ]; then
        say "KEEP=1: the stack stays up (remove it: $DOCKER rm -f \$($DOCKER ps -aq --filter name=^${PREFIX}-))"
        return
    fi
    ids=$(containers)
    if [ -n "$ids" ]; then
        for id in $ids; do $DOCKER logs "$id" > "$WORK/logs/$($DOCKER inspect -f '{{.Name}}' "$id" | tr -d /).log" 2>&1 || true; done
        $DOCKER rm -f $ids > /dev/null
    fi
    $DOCKER volume rm -f "$PREFIX-data" > /dev/null 2>&1 || true
}
# ---- what the run needs, checked before the long container part ----
"$PYTHON" -c 'import sopgym' 2> /dev/null ||
    refuse "PYTHON=$PYTHON cannot import sopgym (the local run needs it): python3 -m venv .venv && .venv/bin/pip install -e . then PYTHON=.venv/bin/python"
$DOCKER info > /dev/null 2>&1 || refuse "$DOCKER cannot reach a Docker daemon (start dockerd; docs/deploy.md)"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    $DOCKER image inspect python:3.11-slim > /dev/null 2>&1 ||
        refuse "no python:3.11-slim image: docker pull it, or without a registry: sudo compose/build-base.sh"
    # Docker 23+ clients build with buildx only; older ones (Debian 12's docker.io, 20.10) have
    # BuildKit built in and take DOCKER_BUILDKIT=1
    client=$($BUILD_DOCKER version -f '{{.Client.Version}}' 2> /dev/null || echo 0)
    if [ "${client%%.*}" -ge 23 ] 2> /dev/null && ! $BUILD_DOCKER buildx version > /dev/null 2>&1; then
        refuse "$BUILD_DOCKER $client has no buildx: install the buildx plugin, or set BUILD_DOCKER to a client with BuildKit built in (BUILD_DOCKER=/usr/bin/docker with Debian's docker.io)"
    fi
fi
trap cleanup EXIT
mkdir -p "$WORK/logs" "$WORK/runs"

# ---- images ----
roles=(tools:services/tools/Dockerfile gateway:gateway/Dockerfile agents:agents/Dockerfile
       model:services/model/Dockerfile user:services/user/Dockerfile
       observability:observability/Dockerfile)
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    built=$(now)
    for spec in "${roles[@]}"; do
        role=${spec%%:*}
        say "building sopgym/$role:$TAG"
        (cd "$ROOT" && DOCKER_BUILDKIT=1 $BUILD_DOCKER build --network host -q \
            -f "${spec#*:}" -t "sopgym/$role:$TAG" . > "$WORK/logs/build-$role.log")
    done
    figure build_s "$(since "$built")"
fi
for spec in "${roles[@]}"; do
    role=${spec%%:*}
    figure "image_mb_$role" "$($DOCKER image inspect -f '{{.Size}}' "sopgym/$role:$TAG" | awk '{printf "%.0f", $1/1e6}')"
done

# ---- the stack: host networking, loopback addresses, one secret for this deployment ----
cleanup
SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
$DOCKER volume create "$PREFIX-data" > /dev/null
chown 10001:10001 "$WORK/runs" 2>/dev/null || chmod 0777 "$WORK/runs"
start() {  # NAME PORT HEALTH_PATH IMAGE ARGS...: a detached container with its health probe
    local name=$1 port=$2 path=$3 image=$4
    shift 4
    $DOCKER run -d --name "$PREFIX-$name" --network host --init \
        --health-cmd "sopgym-ready $port $path" --health-interval 2s --health-retries 3 \
        --health-timeout 3s --health-start-period 600s "${EXTRA[@]}" \
        "sopgym/$image:$TAG" "$@" > /dev/null
}
healthy() {  # NAME...: wait until each is healthy (at most 10 minutes)
    local deadline=$(( $(date +%s) + 600 ))
    for name in "$@"; do
        until [ "$($DOCKER inspect -f '{{.State.Health.Status}}' "$PREFIX-$name")" = healthy ]; do
            if [ "$($DOCKER inspect -f '{{.State.Running}}' "$PREFIX-$name")" != true ] ||
                [ "$(date +%s)" -gt "$deadline" ]; then
                $DOCKER logs --tail 30 "$PREFIX-$name" >&2
                say "$name did not become healthy"
                exit 1
            fi
            sleep 0.5
        done
    done
}

started=$(now)
services=()
i=0
for domain in "${DOMAIN_LIST[@]}"; do
    port=$((BASE + i))
    EXTRA=(-e SOPGYM_DATA=/data -e "SOPGYM_SERVICE_SECRET=$SECRET" -v "$PREFIX-data:/data")
    start "tools-$(slug "$domain")" "$port" /readyz tools \
        serve-tools "$domain" --host 127.0.0.1 --port "$port"
    services+=(--service "$domain=http://127.0.0.1:$port")
    i=$((i + 1))
done
EXTRA=(-e SOPGYM_DATA=/data -v "$PREFIX-data:/data")
start user-sim "$USER_PORT" /readyz user user-sim --host 127.0.0.1 --port "$USER_PORT"
EXTRA=(-e SOPGYM_DATA=/data -v "$PREFIX-data:/data" -e "SOPGYM_MODEL_DOMAINS=$DOMAINS")
start model "$MODEL_PORT" /readyz model model-server --host 127.0.0.1 --port "$MODEL_PORT"
EXTRA=(-e SOPGYM_DATA=/data -v "$PREFIX-data:/data" -e "SOPGYM_SERVICE_SECRET=$SECRET"
       -e SOPGYM_GATEWAY_DISCOVER_WAIT=600)
start gateway "$GATEWAY_PORT" /readyz gateway gateway --host 127.0.0.1 --port "$GATEWAY_PORT" \
    "${services[@]}" --user-sim "http://127.0.0.1:$USER_PORT"
healthy gateway model user-sim
figure stack_up_s "$(since "$started")"

# ---- the sharded run: two workers, automatic claims ----
worker() {  # N: start agent worker N
    EXTRA=(-e "SOPGYM_DOMAINS=$DOMAINS" -v "$WORK/runs:/runs")
    start "worker-$1" $((BASE + 20 + $1)) /healthz agents agent-worker \
        --gateway "http://127.0.0.1:$GATEWAY_PORT" --shard "auto/$SHARDS" --run-dir "/runs/$RUN" \
        --agent fc --model scripted --base-url "http://127.0.0.1:$MODEL_PORT/v1" \
        --limit "$LIMIT" --metrics-port $((BASE + 20 + $1)) --metrics-host 127.0.0.1 \
        --wait 600 --outage-wait 300
}
lines() { cat "$WORK/runs/$RUN"/shards/*.jsonl 2>/dev/null | wc -l; }
total=$((LIMIT * ${#DOMAIN_LIST[@]}))
wait_lines() {  # N: until the shards hold N result lines (at most 10 minutes)
    local deadline=$(( $(date +%s) + 600 ))
    until [ "$(lines)" -ge "$1" ]; do
        [ "$(date +%s)" -gt "$deadline" ] && { say "stuck below $1 lines"; exit 1; }
        sleep 0.2
    done
}
run_started=$(now)
worker 1
worker 2

# a worker is told to stop (a pod deleted, a node drained): it must stop within 5 s, its task
# in flight unrecorded and its claim given back; started again, it resumes the shard
wait_lines $((total / 8))
say "SIGTERM to worker-1 at $(lines) of $total lines"
stopping=$(now)
$DOCKER kill -s TERM "$PREFIX-worker-1" > /dev/null
while [ "$($DOCKER inspect -f '{{.State.Running}}' "$PREFIX-worker-1")" = true ]; do sleep 0.05; done
figure sigterm_stop_s "$(since "$stopping")"
figure sigterm_exit_code "$($DOCKER inspect -f '{{.State.ExitCode}}' "$PREFIX-worker-1")"
$DOCKER logs "$PREFIX-worker-1" > "$WORK/logs/worker-1-before-restart.log" 2>&1
figure sigterm_claim_given_back "$(grep -c 'claim given back' "$WORK/logs/worker-1-before-restart.log" || true)"
$DOCKER start "$PREFIX-worker-1" > /dev/null  # it claims a free shard and resumes it

# a tool service crashes mid-run and comes back (as a pod does): the tasks that meet it down
# must wait and finish. Each shard works the domains in order: the last domain's service is
# killed just before the leading shard reaches that domain, and started again once a shard
# has said it pauses for it (or after 20 s).
lead() {
    local most=0 n
    for file in "$WORK/runs/$RUN"/shards/*.jsonl; do
        n=$(wc -l < "$file")
        [ "$n" -gt "$most" ] && most=$n
    done
    echo "$most"
}
until [ "$(lead)" -ge $((total / SHARDS - LIMIT / SHARDS - 2)) ]; do sleep 0.1; done
victim="tools-$(slug "${DOMAIN_LIST[-1]}")"
say "killing $victim at $(lines) of $total lines"
killed=$(now)
$DOCKER kill "$PREFIX-$victim" > /dev/null
for _ in $(seq 200); do
    $DOCKER logs "$PREFIX-worker-1" 2>&1 | grep -q "dependency down" && break
    $DOCKER logs "$PREFIX-worker-2" 2>&1 | grep -q "dependency down" && break
    sleep 0.1
done
$DOCKER start "$PREFIX-$victim" > /dev/null
healthy "$victim"
figure tool_down_s "$(since "$killed")"

for n in 1 2; do
    figure "worker_${n}_exit" "$($DOCKER wait "$PREFIX-worker-$n")"
done
figure sharded_run_s "$(since "$run_started")"
figure outage_pauses "$("$PYTHON" -c '
import json, sys
from pathlib import Path
metas = [json.loads(p.read_text()) for p in Path(sys.argv[1]).glob("shard-*.json")]
outages = sum(m.get("outages", 0) for m in metas)
paused = sum(m.get("outage_wait_s", 0) for m in metas)
print("%d_outages_%.1fs_paused" % (outages, paused))' "$WORK/runs/$RUN/shards")"

# ---- merge, in the observability image ----
EXTRA=(-e SOPGYM_DATA=/data -v "$PREFIX-data:/data" -v "$WORK/runs:/runs")
$DOCKER run --rm --network host --init "${EXTRA[@]}" "sopgym/observability:$TAG" \
    merge "/runs/$RUN" --shards "$SHARDS" --wait 60 --stall 60 > "$WORK/logs/merge.log" 2>&1 ||
    { cat "$WORK/logs/merge.log" >&2; say "merge failed"; exit 1; }

# ---- the same tasks as leases: a run service, workers holding many episodes each, one of
# them SIGKILLed while it holds leases (its tasks go to the others), a third added mid-run ----
LEASE_PORT=$((BASE + 13))
LEASE_RUN="$RUN-leases"
EXTRA=(-e SOPGYM_DATA=/data -v "$PREFIX-data:/data" -v "$WORK/runs:/runs")
start run-service "$LEASE_PORT" /readyz observability run-service --run-dir "/runs/$LEASE_RUN" \
    "${DOMAIN_LIST[@]/#/--domain=}" --agent fc --model scripted --limit "$LIMIT" --lease-s 5 \
    --host 127.0.0.1 --port "$LEASE_PORT"
healthy run-service
lease_worker() {  # N: start lease worker N, 8 episodes in flight
    EXTRA=()
    start "lease-worker-$1" $((BASE + 24 + $1)) /healthz agents agent-worker \
        --gateway "http://127.0.0.1:$GATEWAY_PORT" --leases "http://127.0.0.1:$LEASE_PORT" \
        --concurrency 8 --agent fc --model scripted --base-url "http://127.0.0.1:$MODEL_PORT/v1" \
        --metrics-port $((BASE + 24 + $1)) --metrics-host 127.0.0.1 --wait 600
}
lease_progress() {  # KEY: the run service's count (done, lapsed, duplicates, ...)
    "$PYTHON" - "http://127.0.0.1:$LEASE_PORT/v1/progress" "$1" <<'PY'
import json, sys, urllib.request
try:
    print(json.load(urllib.request.urlopen(sys.argv[1], timeout=5))[sys.argv[2]])
except OSError:
    print(0)
PY
}
lease_done() { lease_progress done; }
leases_started=$(now)
lease_worker 1
lease_worker 2
deadline=$(( $(date +%s) + 600 ))
until [ "$(lease_done)" -ge $((total / 4)) ]; do
    [ "$(date +%s)" -gt "$deadline" ] && { say "the lease run is stuck"; exit 1; }
    sleep 0.2
done
say "SIGKILL to lease-worker-1 at $(lease_done) of $total results; lease-worker-3 joins"
$DOCKER kill -s KILL "$PREFIX-lease-worker-1" > /dev/null
lease_worker 3
for n in 2 3; do
    figure "lease_worker_${n}_exit" "$($DOCKER wait "$PREFIX-lease-worker-$n")"
done
figure lease_run_s "$(since "$leases_started")"
$DOCKER run --rm --network host --init "${EXTRA[@]}" -v "$WORK/runs:/runs" \
    "sopgym/observability:$TAG" merge-leases "http://127.0.0.1:$LEASE_PORT" --wait 120 \
    > "$WORK/logs/merge-leases.log" 2>&1 ||
    { cat "$WORK/logs/merge-leases.log" >&2; say "merge-leases failed"; exit 1; }
figure leases_lapsed "$(lease_progress lapsed)"  # the killed worker's leases, taken over
figure lease_results_dropped_as_duplicates "$(lease_progress duplicates)"

# ---- the same tasks, run locally ----
(cd "$WORK" && "$PYTHON" -m sopgym run "${DOMAIN_LIST[@]}" --limit "$LIMIT" --agent fc \
    --model scripted --runs-dir "$WORK/local" --run-id local > "$WORK/logs/local-run.log" 2>&1) ||
    { tail -20 "$WORK/logs/local-run.log" >&2; say "local run failed"; exit 1; }

# ---- compare, task for task ----
"$PYTHON" - "$WORK/runs/$RUN" "$WORK/local/local" "$FIGURES" "$WORK/runs/$LEASE_RUN" <<'EOF'
import json
import sys
from pathlib import Path

sharded, local, figures = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
leased = Path(sys.argv[4])


def rows(run: Path) -> dict:
    lines = (run / "results.jsonl").read_text().splitlines()
    return {(r["task_id"], r.get("trial", 0)): r for r in map(json.loads, lines)}


a, b = rows(sharded), rows(local)
same = [k for k in a if k in b and a[k]["outputs"] == b[k]["outputs"]
        and a[k]["score"]["success"] == b[k]["score"]["success"]]
summary = json.loads((sharded / "summary.json").read_text())
tod = [r for r in a.values() if r["domain"] == "tod/live"]
result = {
    "tasks_sharded": len(a),
    "tasks_local": len(b),
    "tasks_equal": len(same),
    "infra_errors": summary["infra_errors"],
    "duplicate_task_rows": summary["duplicate_task_rows"],
    "unfinished_shards": summary["unfinished_shards"],
    "tsr_sharded": round(summary["tsr"], 4),
    "tsr_local": round(json.loads((local / "summary.json").read_text())["tsr"], 4),
    "tod_live_successes": f"{sum(r['score']['success'] for r in tod)}/{len(tod)}",
}
lease_lines = (leased / "results.jsonl").read_text().splitlines()
c = rows(leased)
result["tasks_leased"] = len(lease_lines)
result["lease_duplicate_rows"] = len(lease_lines) - len(c)
result["tasks_leased_equal"] = sum(
    1 for k in c if k in b and c[k]["outputs"] == b[k]["outputs"]
    and c[k]["score"]["success"] == b[k]["score"]["success"]
)
result["lease_infra_errors"] = sum(r["status"] == "infra_error" for r in c.values())
for line in figures.read_text().splitlines():
    key, _, value = line.partition("=")
    result[key] = value
print(json.dumps(result, indent=2))
ok = (len(a) == len(b) == len(same) and result["infra_errors"] == 0
      and len(c) == len(b) == result["tasks_leased_equal"] and not result["lease_duplicate_rows"]
      and not result["lease_infra_errors"] and int(result["leases_lapsed"]) > 0
      and not result["outage_pauses"].startswith("0_")  # the restart met tasks, which waited
      and not result["unfinished_shards"] and float(result["sigterm_stop_s"]) < 5
      and result["sigterm_exit_code"] == "143" and tod and all(r["score"]["success"] for r in tod))
sys.exit(0 if ok else 1)
EOF
