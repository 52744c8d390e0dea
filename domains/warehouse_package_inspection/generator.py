"""Seeded generator for the warehouse package inspection dataset, task inputs and images.

Each task is one received package: a purchase-order line, a barcode image, a package photo,
the received quantity and the dock it arrived at. Scenarios rotate on co-prime cycles so every
SOP branch appears many times; the labels are not decided here: the reference policy derives
them from what the tools read in the tables and the images.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task
from sopgym.domains.warehouse_package_inspection.render import (
    Blotch,
    render_barcode,
    render_package,
)
from sopgym.domains.warehouse_package_inspection.symbology import check_digit
from sopgym.domains.warehouse_package_inspection.tools.get_chargeback_terms import COST_BANDS

DOMAIN = "warehouse_package_inspection"
TASK_COUNT = 200
WAREHOUSES = {
    "ATL2": "Atlanta South DC",
    "DFW1": "Dallas Fort Worth DC",
    "ORD4": "Chicago O'Hare DC",
    "PHX3": "Phoenix West DC",
    "EWR1": "Newark Port DC",
}
LOCATION_TYPES = ["inbound_dock", "inbound_dock", "staging_lane", "cross_dock"]
COLOURS = ["blue", "grey", "natural", "black", "white"]
CARRIERS = ["UPS Freight", "FedEx Ground", "XPO Logistics", "Estes", "Old Dominion", "Saia"]
CATEGORIES = {
    "Housewares": ["Ceramic Mug Set", "Steel Saucepan", "Bamboo Cutting Board", "Glass Jar"],
    "Electronics": ["USB-C Charger", "Bluetooth Speaker", "HDMI Cable", "Wireless Mouse"],
    "Apparel": ["Cotton T-Shirt", "Rain Jacket", "Wool Socks", "Denim Jeans"],
    "Toys": ["Building Blocks", "Plush Bear", "Puzzle 500pc", "Toy Truck"],
    "Health & Beauty": ["Hand Cream", "Toothbrush 4pk", "Shampoo 1L", "Sunscreen SPF50"],
}
VENDOR_NAMES = [
    "Northwind Supply", "Bluefield Imports", "Cedar & Co", "Harbor Goods", "Pinecrest Mfg",
    "Summit Wholesale", "Lakeside Trading", "Ironbridge Ltd", "Meadow Home", "Granite Distr.",
    "Coastline Brands", "Redwood Partners",
]  # fmt: skip
# Chargeback matrix: type -> (flat fee, then (percent of value, max per discrepancy) for the
# low, standard and high unit-cost bands).
BANDS = [band for _, band in COST_BANDS]
MATRIX = {
    "wrong_item":               (75, (10, 500), (8, 750), (5, 1500)),
    "unreadable_label":         (25, (2, 100), (2, 150), (1, 200)),
    "overage":                  (15, (5, 250), (4, 400), (3, 600)),
    "underage":                 (20, (12, 400), (10, 600), (8, 900)),
    "cancelled_line":           (50, (10, 500), (8, 750), (6, 1000)),
    "severe_quantity_mismatch": (100, (15, 800), (12, 1200), (10, 2000)),
    "misdirected":              (60, (3, 300), (2, 450), (2, 600)),
    "minor_damage":             (20, (6, 300), (5, 450), (4, 600)),
    "severe_damage":            (45, (20, 900), (15, 1400), (12, 2500)),
}  # fmt: skip

# Rotations: barcode over all tasks; the other checks over the tasks whose barcode matches.
BARCODE_CYCLE = [
    "match", "match", "other_product", "match", "match", "smear", "match", "match", "match",
    "unknown_gtin", "match", "match", "match", "other_product", "match", "match", "torn",
    "match", "match", "unknown_gtin",
]  # fmt: skip
QUANTITY_CYCLE = [
    "exact", "overage", "underage", "exact_after_cancel", "severe_over", "cancelled",
    "boundary", "severe_under", "shipped_cancelled_units",
]  # fmt: skip
LOCATION_CYCLE = ["correct", "correct", "misdirected", "correct"]
DAMAGE_CYCLE = ["clean", "minor", "specks", "severe", "clean"]


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    files_dir.mkdir(parents=True, exist_ok=True)
    locations = _locations(rng)
    vendors = _vendors(rng)
    products = _products(rng)
    catalogue = {p["gtin"] for p in products}
    orders, tasks = [], []
    matched = 0
    for i in range(TASK_COUNT):
        product = rng.choice(products)
        warehouse = rng.choice(sorted(WAREHOUSES))
        barcode = BARCODE_CYCLE[i % len(BARCODE_CYCLE)]
        if barcode == "match":
            j, matched = matched, matched + 1
            quantity = QUANTITY_CYCLE[j % len(QUANTITY_CYCLE)]
            site = LOCATION_CYCLE[j % len(LOCATION_CYCLE)]
            damage = DAMAGE_CYCLE[j % len(DAMAGE_CYCLE)]
        else:  # later checks are skipped; their data is still realistic
            quantity = rng.choice(["exact", "overage", "underage", "cancelled"])
            site = rng.choice(LOCATION_CYCLE)
            damage = rng.choice(DAMAGE_CYCLE)
        ordered, cancelled, received = _quantities(rng, quantity)
        po_number = f"PO-{4500000 + i * 13:07d}"
        order_date = date(2025, 9, 1) + timedelta(days=rng.randrange(120))
        orders.append(
            {
                "po_number": po_number,
                "vendor_id": rng.choice(vendors)["vendor_id"],
                "product_id": product["product_id"],
                "line_status": _line_status(ordered, cancelled),
                "ordered_quantity": ordered,
                "cancelled_quantity": cancelled,
                "unit_cost": _unit_cost(rng),
                "ship_to_warehouse": warehouse,
                "order_date": order_date.isoformat(),
            }
        )
        gtin = _scanned_gtin(rng, barcode, product, products, catalogue)
        defect = barcode if barcode in ("smear", "torn") else None
        render_barcode(gtin, files_dir / f"bc_{i:06d}.png", defect)
        render_package(files_dir / f"pkg_{i:06d}.png", _blotches(rng, damage), rng.choice([2, 3]))
        dock = rng.choice(
            [
                loc
                for loc in locations
                if (loc["warehouse_code"] == warehouse) == (site == "correct")
            ]
        )
        tasks.append(
            Task(
                id=f"{DOMAIN}-{i:03d}",
                domain=DOMAIN,
                inputs={
                    "inspection_id": f"INS-{700000 + i * 17:06d}",
                    "po_number": po_number,
                    "received_quantity": received,
                    "receiving_location": dock["location_code"],
                    "barcode_image": f"bc_{i:06d}.png",
                    "package_image": f"pkg_{i:06d}.png",
                    "carrier": rng.choice(CARRIERS),
                    "received_date": (
                        order_date + timedelta(days=rng.randrange(5, 40))
                    ).isoformat(),
                },
            )
        )
    return GeneratedData(
        tables={
            "purchase_orders": pd.DataFrame(orders),
            "products": pd.DataFrame(products),
            "locations": pd.DataFrame(locations),
            "vendors": pd.DataFrame(vendors),
            "chargeback_matrix": pd.DataFrame(chargeback_matrix()),
        },
        tasks=tasks,
    )


def _quantities(rng: random.Random, scenario: str) -> tuple[int, int, int]:
    """(ordered, cancelled, received) for a quantity scenario."""
    ordered = rng.randrange(10, 241)
    if scenario == "exact":
        return ordered, 0, ordered
    if scenario in ("overage", "underage"):  # within 20 % of expected; some lines part-cancelled
        cancelled = rng.choice([0, 0, 0, rng.randrange(1, ordered // 4)])
        expected = ordered - cancelled
        step = rng.randrange(1, max(2, expected // 5 + 1))
        return ordered, cancelled, expected + step if scenario == "overage" else expected - step
    if scenario == "exact_after_cancel":
        cancelled = rng.randrange(1, ordered // 2)
        return ordered, cancelled, ordered - cancelled
    if scenario in ("severe_over", "severe_under"):
        step = ordered // 5 + rng.randrange(1, max(2, ordered // 3))
        received = ordered + step if scenario == "severe_over" else max(1, ordered - step)
        return ordered, 0, received
    if scenario == "cancelled":
        return ordered, ordered, rng.randrange(5, ordered + 1)
    if scenario == "boundary":  # exactly 20 % either way: not severe
        expected = 5 * rng.randrange(3, 40)
        cancelled = rng.choice([0, 0, 5])
        step = expected // 5 * rng.choice([1, -1])
        return expected + cancelled, cancelled, expected + step
    if scenario == "shipped_cancelled_units":  # vendor shipped the full original quantity
        cancelled = rng.randrange(1, ordered // 3)
        return ordered, cancelled, ordered
    raise ValueError(scenario)


def _line_status(ordered: int, cancelled: int) -> str:
    if cancelled == 0:
        return "open"
    return "cancelled" if cancelled == ordered else "partially_cancelled"


def _unit_cost(rng: random.Random) -> float:
    roll = rng.random()
    if roll < 0.06:
        return rng.choice([20.0, 100.0])  # band edges belong to the upper band
    low, high = (3.25, 19.99) if roll < 0.4 else (20.0, 99.99) if roll < 0.75 else (100.0, 349.99)
    return round(rng.uniform(low, high), 2)


def _scanned_gtin(
    rng: random.Random, scenario: str, product: dict, products: list[dict], catalogue: set[str]
) -> str:
    if scenario == "other_product":
        return rng.choice([p for p in products if p["product_id"] != product["product_id"]])["gtin"]
    if scenario == "unknown_gtin":
        while (gtin := _gtin(rng)) in catalogue:
            pass
        return gtin
    return product["gtin"]


def _gtin(rng: random.Random) -> str:
    body = "0" + "".join(str(rng.randrange(10)) for _ in range(11))
    return body + check_digit(body)


def _blotches(rng: random.Random, scenario: str) -> list[Blotch]:
    """Dark marks sized so each scenario lands well inside one damage band of the SOP."""
    if scenario == "clean":
        return []
    if scenario == "specks":  # dirt: a few pixels each, far below the damage threshold
        return [_mark(rng, (20, 80), (16, 84), (1, 2), (1, 2)) for _ in range(rng.randint(1, 3))]
    if scenario == "minor":  # one stain of roughly 1.5-3 % of the photo
        return [_mark(rng, (30, 75), (25, 75), (9, 13), (8, 11))]
    if scenario == "severe":  # two or three large, separate stains: above 4.5 %
        marks = [
            _mark(rng, (30, 41), (28, 72), (11, 16), (10, 15)),
            _mark(rng, (76, 87), (28, 72), (11, 16), (10, 15)),
        ]
        if rng.random() < 0.5:
            marks.append(_mark(rng, (120, 129), (64, 75), (6, 9), (5, 8)))
        return marks
    raise ValueError(scenario)


def _mark(
    rng: random.Random,
    xs: tuple[int, int],
    ys: tuple[int, int],
    rxs: tuple[int, int],
    rys: tuple[int, int],
) -> Blotch:
    """A blotch centred in the half-open ranges xs, ys with radii drawn from rxs, rys."""
    return Blotch(rng.randrange(*xs), rng.randrange(*ys), rng.randint(*rxs), rng.randint(*rys))


def _locations(rng: random.Random) -> list[dict]:
    codes = rng.sample(range(1000, 10000), 6 * len(WAREHOUSES))
    return [
        {
            "location_code": f"RCV-{codes[k]:04d}",
            "warehouse_code": warehouse,
            "site_name": WAREHOUSES[warehouse],
            "location_type": LOCATION_TYPES[k % len(LOCATION_TYPES)],
        }
        for k, warehouse in enumerate(w for w in sorted(WAREHOUSES) for _ in range(6))
    ]


def _vendors(rng: random.Random) -> list[dict]:
    return [
        {
            "vendor_id": f"V-{10000 + 37 * k:05d}",
            "vendor_name": name,
            "on_time_percent": round(rng.uniform(78, 99.5), 1),
            "fill_rate_percent": round(rng.uniform(85, 99.9), 1),
        }
        for k, name in enumerate(VENDOR_NAMES)
    ]


def _products(rng: random.Random) -> list[dict]:
    products, seen = [], set()
    for k, (category, item) in enumerate(
        (c, item) for c, items in CATEGORIES.items() for item in items for _ in range(3)
    ):
        while (gtin := _gtin(rng)) in seen:
            pass
        seen.add(gtin)
        products.append(
            {
                "product_id": f"SKU-{300000 + 11 * k:06d}",
                "gtin": gtin,
                "description": f"{item} ({rng.choice(COLOURS)})",
                "category": category,
                "unit_of_measure": "each",
                "case_pack": rng.choice([6, 12, 24, 48]),
            }
        )
    return products


def chargeback_matrix() -> list[dict]:
    return [
        {
            "rule_id": f"{kind}/{band}",
            "discrepancy_type": kind,
            "cost_band": band,
            "flat_fee": float(flat),
            "percent_of_value": float(percent),
            "max_amount": float(cap),
        }
        for kind, (flat, *terms) in MATRIX.items()
        for band, (percent, cap) in zip(BANDS, terms, strict=True)
    ]
