#!/bin/bash
# The images' health check: `sopgym-ready PORT [PATH]` succeeds when GET
# http://127.0.0.1:PORT/PATH (default /readyz) answers 200. Bash alone (its /dev/tcp and read
# builtins): no interpreter to start, so it answers in milliseconds on a loaded machine.
exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "${2:-/readyz}" >&3
read -r -t 2 _ status _ <&3 || exit 1
[ "$status" = 200 ]
