"""TOD: procedure-following in customer-service dialogues (TOD-ProcBench's design, our own
content). A family folder: its packs are ``tod/<name>`` and ``sopgym run tod`` selects them.

The shared pieces live here as plain modules (packs are the subfolders): the facts a
procedure reads (:mod:`.facts`), its conditions (:mod:`.conditions`), the condition-action
trees and their three written formats (:mod:`.trees`, :mod:`.formats`), the agent's actions
as tools over a per-episode state (:mod:`.actions`) and the intents (:mod:`.intents`).
"""
