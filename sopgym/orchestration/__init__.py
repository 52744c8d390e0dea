"""Run orchestration: the runner, the embedded stack, process management, shards and merge,
scale-out commands and the load test."""
