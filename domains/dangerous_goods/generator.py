"""Seeded generator for the dangerous goods dataset and the classification requests.

Each product gets a hazard level (which biases its severity scores so that every class is
reachable) and a data scenario from a fixed rotation (which record is absent, a draft,
unscored or outdated), so every missing-data path of the SOP appears many times. Labels are
not decided here: the reference policy derives them from what the tools return.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

TASK_COUNT = 327
DOMAIN = "dangerous_goods"
MODES = ["road", "sea", "air"]
# hazard level -> inclusive range of the severity scores drawn for that level
LEVELS = {"low": (1, 2), "moderate": (2, 3), "high": (3, 4), "extreme": (4, 5)}
SUPPLIERS = [
    "Nordchem GmbH",
    "Brightwater Industrial Supply",
    "Kestrel Coatings Ltd",
    "Meridian Lab Products",
    "Sunport Chemicals BV",
    "Halden Process Solutions",
]
BRANDS = ["ProLine", "Indus", "ClearSol", "Vantec", "Apex", "Mariner", "Technigrade"]

# UN number -> (proper shipping name, class/division, packing group, road, sea, air scores).
# A None mode score means that mode was never assessed for the UN number.
TRANSPORT: dict[str, tuple[str, str, str, int | None, int | None, int | None]] = {
    "UN3082": ("Environmentally hazardous substance, liquid, n.o.s.", "9", "III", 1, 2, 2),
    "UN3077": ("Environmentally hazardous substance, solid, n.o.s.", "9", "III", 1, 2, 1),
    "UN1263": ("Paint", "3", "III", 2, 2, 2),
    "UN1950": ("Aerosols", "2.1", "-", 1, 1, 2),
    "UN1993": ("Flammable liquid, n.o.s.", "3", "II", 2, 3, 3),
    "UN1170": ("Ethanol solution", "3", "II", 2, 2, 3),
    "UN1219": ("Isopropanol", "3", "II", 3, 2, 3),
    "UN1823": ("Sodium hydroxide, solid", "8", "II", 2, 3, 3),
    "UN1090": ("Acetone", "3", "II", 3, 3, 4),
    "UN1789": ("Hydrochloric acid", "8", "II", 3, 4, 4),
    "UN1830": ("Sulphuric acid", "8", "II", 4, 3, 4),
    "UN3480": ("Lithium ion batteries", "9", "II", 3, 3, 4),
    "UN1203": ("Gasoline", "3", "II", 4, 5, 5),
    "UN2031": ("Nitric acid", "8", "I", 5, 4, 5),
    "UN2014": ("Hydrogen peroxide, aqueous solution", "5.1", "II", 3, 4, None),
    "UN1942": ("Ammonium nitrate", "5.1", "III", 3, 4, None),
    "UN1005": ("Ammonia, anhydrous", "2.3", "-", 5, 5, None),
    "UN1017": ("Chlorine", "2.3", "-", 5, 4, None),
}
UNLISTED_UN = ["UN2735", "UN1760", "UN3266", "UN2922"]  # on some SDSs, absent from the table
PRODUCT_NAMES = {
    "UN3082": "marine antifouling concentrate",
    "UN3077": "zinc oxide powder",
    "UN1263": "industrial enamel paint",
    "UN1950": "maintenance spray",
    "UN1993": "degreasing solvent",
    "UN1170": "ethanol 70% solution",
    "UN1219": "isopropyl alcohol",
    "UN1823": "caustic soda pearls",
    "UN1090": "acetone technical grade",
    "UN1789": "hydrochloric acid 33%",
    "UN1830": "sulphuric acid 96%",
    "UN3480": "lithium-ion battery pack",
    "UN1203": "petrol fuel additive",
    "UN2031": "nitric acid 65%",
    "UN2014": "hydrogen peroxide 35%",
    "UN1942": "ammonium nitrate fertiliser",
    "UN1005": "anhydrous ammonia cylinder",
    "UN1017": "chlorine gas cylinder",
    "UN2735": "amine hardener",
    "UN1760": "corrosive cleaning liquid",
    "UN3266": "alkaline etching liquid",
    "UN2922": "corrosive toxic liquid",
}
# waste stream -> (method, licensed carrier required, severity score or None while in review)
WASTE_STREAMS = {
    "WS-101": ("neutralise and send to non-hazardous landfill", False, 1),
    "WS-102": ("solvent recovery by distillation", False, 2),
    "WS-203": ("fuel blending for cement kilns", True, 2),
    "WS-204": ("aqueous physico-chemical treatment", True, 3),
    "WS-305": ("hazardous waste incineration", True, 3),
    "WS-306": ("acid and alkali neutralisation plant", True, 4),
    "WS-407": ("high-temperature incineration", True, 4),
    "WS-408": ("return of pressurised cylinders to the filler", True, 5),
    "WS-409": ("stabilisation of reactive waste", True, 5),
    "WS-510": ("mixed laboratory waste, under review", True, None),
    "WS-511": ("battery recycling route, under review", True, None),
}
PENDING_STREAMS = ["WS-510", "WS-511"]
UNLISTED_STREAMS = ["WS-901", "WS-902", "WS-903"]
PPE = ["safety glasses", "nitrile gloves", "face shield", "chemical apron", "respirator"]
STORAGE_GROUPS = ["flammables cabinet", "corrosives store", "oxidiser store", "gas cage", "general"]
HAZARD_STATEMENTS = {
    "low": ["H315", "H319", "H412"],
    "moderate": ["H225", "H302", "H319", "H336"],
    "high": ["H225", "H290", "H314", "H331"],
    "extreme": ["H224", "H270", "H310", "H314", "H330"],
}

# What is wrong with the product's data, in rotation. Secondary gaps name the component and
# how it is missing; the policy decides what each gap means.
SCENARIOS: list[tuple[str, ...]] = [
    (),
    ("handling:draft",),
    (),
    ("transport:unlisted",),
    ("disposal:pending",),
    ("sds:not_found",),
    (),
    ("handling:absent", "disposal:unlisted"),
    ("sds:outdated",),
    (),
    ("transport:mode_unassessed",),
    ("handling:unscored",),
    (),
    ("sds:unscored",),
    ("disposal:unlisted",),
    ("handling:draft", "transport:unlisted", "disposal:pending"),
    (),
    ("handling:absent",),
    ("transport:unlisted", "disposal:pending"),
    (),
]


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    products, sheets, guidelines, tasks = [], [], [], []
    for i in range(TASK_COUNT):
        product_id = f"PRD-{400000 + i * 17:06d}"
        level = rng.choice(list(LEVELS))
        gaps = dict(gap.split(":") for gap in SCENARIOS[i % len(SCENARIOS)])
        mode = "air" if gaps.get("transport") == "mode_unassessed" else rng.choice(MODES)
        un_number = _un_number(rng, level, mode, gaps.get("transport"))
        supplier = rng.choice(SUPPLIERS)
        assessed = date(2026, 1, 2) + timedelta(days=rng.randrange(330))
        products.append(
            {
                "product_id": product_id,
                "supplier": supplier,
                "emergency_phone": f"+44 20 7946 {1000 + i:04d}",
            }
        )
        declared = un_number
        if i % 7 == 3:  # the shipping declaration quotes another UN number than the SDS
            declared = rng.choice([u for u in TRANSPORT if u != un_number])
        tasks.append(
            Task(
                id=f"{DOMAIN}-{i:03d}",
                domain=DOMAIN,
                inputs={
                    "product_id": product_id,
                    "product_name": f"{rng.choice(BRANDS)} {PRODUCT_NAMES[un_number]}",
                    "supplier": supplier,
                    "declared_un_number": declared,
                    "transport_mode": mode,
                    "assessment_date": assessed.isoformat(),
                },
            )
        )
        if gaps.get("sds") == "not_found":
            continue
        sds_id = f"SDS-{700000 + i * 11:06d}"
        sheets.append(_sheet(rng, i, product_id, sds_id, un_number, level, gaps, assessed))
        if gaps.get("handling") != "absent":
            guidelines.append(_guideline(rng, i, sds_id, level, gaps.get("handling")))
    return GeneratedData(
        tables={
            "products": pd.DataFrame(products),
            "safety_data_sheets": pd.DataFrame(sheets),
            "handling_guidelines": pd.DataFrame(guidelines),
            "transport_requirements": pd.DataFrame(
                [
                    {
                        "un_number": un,
                        "proper_shipping_name": name,
                        "un_class_division": division,
                        "packing_group": group,
                        "road_score": road,
                        "sea_score": sea,
                        "air_score": air,
                    }
                    for un, (name, division, group, road, sea, air) in TRANSPORT.items()
                ]
            ),
            "disposal_guidelines": pd.DataFrame(
                [
                    {
                        "waste_stream_code": code,
                        "method": method,
                        "licensed_carrier_required": carrier,
                        "severity_score": score,
                    }
                    for code, (method, carrier, score) in WASTE_STREAMS.items()
                ]
            ),
        },
        tasks=tasks,
    )


def _in_level(score: int | None, level: str) -> bool:
    low, high = LEVELS[level]
    return score is not None and low <= score <= high


def _un_number(rng: random.Random, level: str, mode: str, gap: str | None) -> str:
    if gap == "unlisted":
        return rng.choice(UNLISTED_UN)
    index = MODES.index(mode)
    score = {u: row[3:][index] for u, row in TRANSPORT.items()}  # None: mode not assessed
    if gap == "mode_unassessed":
        return rng.choice([u for u, s in score.items() if s is None])
    fitting = [u for u, s in score.items() if _in_level(s, level)]
    return rng.choice(fitting or [u for u, s in score.items() if s is not None])


def _waste_stream(rng: random.Random, level: str, gap: str | None) -> str:
    if gap == "pending":
        return rng.choice(PENDING_STREAMS)
    if gap == "unlisted":
        return rng.choice(UNLISTED_STREAMS)
    return rng.choice([c for c, row in WASTE_STREAMS.items() if _in_level(row[2], level)])


def _sheet(
    rng: random.Random,
    i: int,
    product_id: str,
    sds_id: str,
    un_number: str,
    level: str,
    gaps: dict[str, str],
    assessed: date,
) -> dict:
    cutoff = assessed.replace(year=assessed.year - 5)
    if gaps.get("sds") == "outdated":
        revised = cutoff - timedelta(days=rng.randrange(1, 700))
    elif i % 23 == 0:
        revised = cutoff  # exactly five years old: still current
    else:
        revised = assessed - timedelta(days=rng.randrange(20, 5 * 365 - 20))
    low, high = LEVELS[level]
    statements = rng.sample(HAZARD_STATEMENTS[level], 2)
    return {
        "product_id": product_id,
        "sds_id": sds_id,
        "revision_date": revised.isoformat(),
        "un_number": un_number,
        "waste_stream_code": _waste_stream(rng, level, gaps.get("disposal")),
        "signal_word": "Warning" if level == "low" else "Danger",
        "hazard_statements": ";".join(sorted(statements)),
        "severity_score": None if gaps.get("sds") == "unscored" else rng.randint(low, high),
    }


def _guideline(rng: random.Random, i: int, sds_id: str, level: str, gap: str | None) -> dict:
    low, high = LEVELS[level]
    return {
        "sds_id": sds_id,
        "guideline_id": f"HG-{900000 + i * 7:06d}",
        "status": "draft" if gap == "draft" else "approved",
        "protective_equipment": ";".join(rng.sample(PPE, 1 + LEVELS[level][0] // 2)),
        "storage_group": rng.choice(STORAGE_GROUPS),
        "severity_score": None if gap == "unscored" else rng.randint(low, high),
    }
