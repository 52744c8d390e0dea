"""``sopgym view``: a local web app over run folders (runs, a run's tasks, one task's steps,
two runs compared). It reads only what a run writes, so a copied run folder works too."""
