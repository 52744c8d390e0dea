#!/bin/sh
# Shared by every sopgym Dockerfile. Run with the build context bind-mounted at /src (so no
# source layer stays in the image): installs the sopgym distribution, whose build generates the
# gRPC code in a throw-away build environment, and creates the non-root user the images run as.
# Every dependency ships as a wheel, so no compiler is installed and none is left behind.
set -eu
groupadd --system --gid 10001 sopgym
useradd --system --uid 10001 --gid sopgym --create-home --home-dir /home/sopgym \
    --shell /usr/sbin/nologin sopgym
mkdir -p /data /runs
chown sopgym:sopgym /data /runs
# the rw bind mount lets the in-tree build write its scratch files; they are discarded
pip install --no-cache-dir --disable-pip-version-check --root-user-action=ignore /src
sopgym --version
