"""Evaluation: the scorers, the one scoring entry, episodes rebuilt from traces, reports and
comparisons. Runs (live records), the trace evaluator, ``merge`` and ``report`` all score here."""
