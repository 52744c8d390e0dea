"""SOP-Maze's ablations (paper §7) on three representative scenarios, one per failure mode:
``maze_ablation/<scenario>`` holds the same subtasks as ``maze/<scenario>`` (same ids, same
gold) with simplified queries. Run with ``--sop clean`` (S1: simplified query), ``--sop
deciding`` (S2: the SOP reduced to its deciding part) or ``--sop none`` (S3: no SOP), beside
``sopgym run maze/<scenario>`` (the original). A family folder: it assigns no DOMAIN.
"""
