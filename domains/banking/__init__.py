"""TELLER-style banking: a family of five stateful scenario packs (``banking/loans``, ...),
each on its own per-episode SQLite database, and ``banking/graph``, the one-shot dependency
graph reconstruction (stage 1) over the same scenarios' APIs.

The scenarios are data (``<pack>/scenario.py``); the machinery they share (tools, database,
reference policy, generator, SOP texts) lives in ``_engine``.
"""
