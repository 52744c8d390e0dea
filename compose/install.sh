#!/bin/sh
# Shared by every sopgym Dockerfile, in two layers (sopgym/orchestration/images.py says what
# each role carries):
#   install.sh deps ROLE    the non-root user and ROLE's dependencies only
#                           (compose/requirements/ROLE.txt, written from pyproject.toml): a
#                           layer rebuilt only when they change;
#   install.sh source ROLE  sopgym itself (--no-deps) from the bind-mounted context at /src,
#                           minus what ROLE's image must not carry, and the health probe:
#                           the only layer a source edit rebuilds.
# Every dependency ships as a wheel, so no compiler is installed; the build tools sopgym's own
# build needs (grpcio-tools generates the gRPC code) live in pip's throw-away build environment.
set -eu
step=$1
role=$2
PIP="pip install --no-cache-dir --disable-pip-version-check --root-user-action=ignore"
case "$step" in
deps)
    groupadd --system --gid 10001 sopgym
    useradd --system --uid 10001 --gid sopgym --create-home --home-dir /home/sopgym \
        --shell /usr/sbin/nologin sopgym
    mkdir -p /data /runs
    chown sopgym:sopgym /data /runs
    $PIP -r "/src/compose/requirements/$role.txt"
    ;;
source)
    # the rw bind mount lets the in-tree build write its scratch files; they are discarded
    $PIP --no-deps /src
    package=$(python -c 'import os, sopgym; print(os.path.dirname(sopgym.__file__))')
    python /src/sopgym/orchestration/images.py prune "$role" "$package"
    python /src/sopgym/orchestration/images.py check "$role"
    install -m 0755 /src/compose/ready.sh /usr/local/bin/sopgym-ready
    sopgym --version
    ;;
*)
    echo "usage: install.sh deps|source ROLE" >&2
    exit 2
    ;;
esac
