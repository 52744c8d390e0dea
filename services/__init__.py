"""sopgym's servers other than the gateway: one folder per service (tools, model, ...)."""
