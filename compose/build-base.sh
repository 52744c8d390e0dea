#!/bin/sh
# Builds a local stand-in for the official `python:3.11-slim` image from Debian packages, for a
# machine with Docker but no reachable image registry (every sopgym Dockerfile starts FROM it).
#
#   sudo compose/build-base.sh                 # tags python:3.11-slim
#   BASE_TAG=python:3.11-slim-local compose/build-base.sh
#
# Debian bookworm's python3 is 3.11, the official image's minor version. The stand-in matches
# the paths the Dockerfiles rely on: `python`, `python3` and `pip` in /usr/local/bin, pip allowed
# to install system-wide (no EXTERNALLY-MANAGED marker), CA certificates installed. If this
# machine's pip needs its own CA bundle or configuration (PIP_CERT, /etc/pip.conf), those are
# copied in so `pip install` works inside a build. Needs root, debootstrap and a Debian mirror
# (MIRROR, default deb.debian.org).
set -eu
BASE_TAG=${BASE_TAG:-python:3.11-slim}
SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
ROOTFS=$(mktemp -d "${TMPDIR:-/tmp}/sopgym-base.XXXXXX")
trap 'rm -rf "$ROOTFS"' EXIT

debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-pip,ca-certificates \
    "$SUITE" "$ROOTFS" "$MIRROR"

# the official image's layout: interpreters and pip under /usr/local/bin, pip free to install
rm -f "$ROOTFS"/usr/lib/python3*/EXTERNALLY-MANAGED
ln -sf /usr/bin/python3 "$ROOTFS/usr/local/bin/python"
ln -sf /usr/bin/python3 "$ROOTFS/usr/local/bin/python3"
ln -sf /usr/bin/pip3 "$ROOTFS/usr/local/bin/pip"
ln -sf /usr/bin/pip3 "$ROOTFS/usr/local/bin/pip3"

# this machine's trust store and pip settings (an intercepting proxy's CA, a private index)
CA_BUNDLE=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
if [ -f "$CA_BUNDLE" ]; then
    cp "$CA_BUNDLE" "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
fi
if [ -f /etc/pip.conf ]; then
    cp /etc/pip.conf "$ROOTFS/etc/pip.conf"
fi

# a slim image: no apt lists, docs or caches
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
    "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/locale/*

tar -C "$ROOTFS" -c . | docker import \
    --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    - "$BASE_TAG"
docker run --rm --network host "$BASE_TAG" python -c 'import sys, venv, ensurepip; print(sys.version)'
echo "built $BASE_TAG"
