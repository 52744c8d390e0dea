"""SOP-Maze-style dialogue decisions: a family of answer-only (``json_answer``) packs, one per
scenario, named ``maze/<scenario>``.

Each scenario's SOP is a graph stored as data (:mod:`.scenarios`, rendered to the SOP text by
:mod:`.graph`); conversations come from walking it with a simulated customer
(:mod:`.speech`, :mod:`.pack`); each subtask is a conversation cut just before an agent turn,
and the reference policy reads that partial conversation back to compute the step the agent
must take next. Wide scenarios (LRS) test precise selection among many options, deep ones
(HRS) faithful traversal of prerequisite chains, loops and jumps.

This ``__init__`` assigns no pack of its own: the folder is a family (``sopgym run maze``).
"""
