#!/bin/sh
# The tool services answer only requests carrying the gateway's secret; each deployment has its
# own, never committed. Writes OVERLAY/service-secret.env (kept if it exists), which the
# overlay's secretGenerator turns into the sopgym-service-secret Secret:
#   k8s/make-secret.sh k8s/overlays/local && kubectl apply -k k8s/overlays/local
# Without the file `kubectl kustomize` / `apply -k` fails: no deployment runs without a secret.
set -eu
overlay=${1:?usage: k8s/make-secret.sh k8s/overlays/<name>}
file="$overlay/service-secret.env"
if [ -s "$file" ]; then
    echo "$file exists: kept (delete it and re-apply to rotate the secret)"
    exit 0
fi
umask 077
secret=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
printf 'SOPGYM_SERVICE_SECRET=%s\n' "$secret" > "$file"
echo "wrote $file"
