"""Domain names and procedure shapes of SOP-Maze's published files.

The published file names are mostly CJK with emoji, full-width brackets and spaces; their only
ASCII is often a fragment such as ``v1-20`` plus the record count, so several names reduce to
the same ASCII slug. A name is therefore built from what identifies the file:

- the 23 published scenarios are recognised by a CJK fragment of their name and named by
  their index in the paper's scenario table and its English title
  (``sopmaze/h1_food_combo_business_development``); their shape comes from that table;
- any other name is its ASCII slug plus a short digest of the whole file name
  (``sopmaze/v1_20_3fa9c2d1``), unless the name already is a plain ASCII identifier
  (``BFS_hotel_requests_3.json`` -> ``sopmaze/bfs_hotel_requests``); its shape comes from
  ``BFS`` (wide: LRS) or ``DFS`` (deep: HRS) in the name, else it is ``unknown``.

The name depends on the file name alone, so a re-import names every file as before; where one
folder holds two files of one scenario (the published ``data_with_model_response/`` has two
of L3), the import gives each the digest of its file name too.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sopgym.importers import MAZE_PREFIX

SHAPES: Final = ("LRS", "HRS")
UNKNOWN_SHAPE: Final = "unknown"
_COUNT = re.compile(r"[\s_-]*(\d+)$")
_PLAIN = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Scenario:
    fragment: str  # the CJK fragment of the published file name that identifies it
    index: str  # H1..H10 (deep: HRS), L1..L13 (wide: LRS), as the paper's table numbers them
    title: str  # the paper's English title, as a slug

    @property
    def shape(self) -> str:
        return "HRS" if self.index.startswith("H") else "LRS"

    @property
    def slug(self) -> str:
        return f"{self.index.lower()}_{self.title}"


# The paper's scenario table (Tables 3-5 and their footnote) and the fragments naming its files
SCENARIOS: Final = (
    Scenario("神抢手", "H1", "food_combo_business_development"),
    Scenario("麻子烧烤电话接待员v2", "H2", "restaurant_reservation_customer_service_v2"),
    Scenario("帮忙解放房型", "H3", "check_hotel_room_availability"),
    Scenario("客服回访", "H4", "customer_evaluation_follow_up"),
    Scenario("智能客服助理2", "H5", "food_delivery_customer_service"),
    Scenario("金融客服", "H6", "promoting_loan_services"),
    Scenario("电话来访", "H7", "schedule_in_person_appointment"),
    Scenario("麻子烧烤电话接待员v1", "H8", "restaurant_reservation_customer_service_v1"),
    Scenario("浣熊食堂", "H9", "restaurant_business_development"),
    Scenario("景区票务", "H10", "bulk_order_clarification"),
    Scenario("酒店套餐要素提取专家v1", "L1", "core_info_extraction_v1"),
    Scenario("风险内容", "L2", "risky_content_detect"),
    Scenario("动线机器人", "L3", "flow_line_track"),
    Scenario("客服服务评分", "L4", "customer_service_rate"),
    Scenario("生活项目", "L5", "bulk_order_compare"),
    Scenario("意图识别分析师", "L6", "intention_recognition_analysis"),
    Scenario("流量投放", "L7", "optimal_traffic_delivery_schedule"),
    Scenario("小花开发票", "L8", "app_guide"),
    Scenario("怒了", "L9", "user_emotion_analysis"),
    Scenario("酒店套餐要素提取专家v2", "L10", "core_info_extraction_v2"),
    Scenario("投诉倾向", "L11", "complaint_analysis"),
    Scenario("意图识别-函数", "L12", "intention_recognition_function_call"),
    Scenario("词性分类", "L13", "named_entity_classification"),
)


def _folded(text: str) -> str:
    """Full-width forms folded to their ASCII twins (``（``, ``ｖ２``), lower case."""
    return unicodedata.normalize("NFKC", text).casefold()


def scenario_of(path: Path) -> Scenario | None:
    """The published scenario a file name identifies (exactly one fragment found), else None."""
    name = _folded(path.stem)
    found = [s for s in SCENARIOS if _folded(s.fragment) in name]
    return found[0] if len(found) == 1 else None


def _stem(path: Path) -> str:
    """The file name without extension and trailing record count."""
    return _COUNT.sub("", unicodedata.normalize("NFKC", path.stem).strip()) or path.stem


def domain_name(path: Path) -> str:
    """``sopmaze/<name>``: unique, stable and ASCII for any file name (module docstring)."""
    scenario = scenario_of(path)
    if scenario is not None:
        return MAZE_PREFIX + scenario.slug
    stem = _stem(path)
    slug = re.sub(r"[^a-z0-9]+", "_", stem.lower()).strip("_")
    if _PLAIN.fullmatch(stem) and re.search(r"[a-z]", re.sub(r"bfs|dfs", "", slug)):
        return MAZE_PREFIX + slug
    return MAZE_PREFIX + "_".join(part for part in (slug, name_digest(path)) if part)


def name_digest(path: Path) -> str:
    """A short digest of the whole file name: what tells apart names with the same ASCII."""
    return hashlib.sha256(unicodedata.normalize("NFC", path.name).encode()).hexdigest()[:8]


def shape_of(path: Path, override: str | None = None) -> str:
    """``LRS``/``HRS``: ``override`` (``--shape``), else the paper's table, else ``BFS``/``DFS``
    in the name; ``unknown`` otherwise (still counted in the overall figure)."""
    if override:
        return override
    scenario = scenario_of(path)
    if scenario is not None:
        return scenario.shape
    upper = unicodedata.normalize("NFKC", path.stem).upper()
    return "LRS" if "BFS" in upper else "HRS" if "DFS" in upper else UNKNOWN_SHAPE
