"""Seeded generator for the pre-flight inspection dataset and task inputs.

Every aircraft starts healthy and in date; a rotation of fault bundles then injects the
scenarios (out-of-limit readings, missing readings, suspect parts, lapsed records), with
some boundary cases that must *not* be findings. Labels are derived by the policy.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import count
from pathlib import Path

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task

TASK_COUNT = 150


@dataclass(frozen=True)
class Model:
    name: str
    nose_psi: int
    main_psi: int
    pin_mm: float
    hydraulic: tuple[int, int]
    systems: tuple[str, ...]
    oil_qt: float
    battery_v: float
    gen_volts: tuple[int, int]
    gen_hz: tuple[int, int]
    generators: tuple[str, ...]
    interval_hours: int
    interval_days: int


MODELS = [
    Model("A320-214", 180, 200, 1.0, (2850, 3150), ("GREEN", "BLUE", "YELLOW"), 12.0, 25.0,
          (112, 118), (390, 410), ("GEN1", "GEN2", "APU"), 750, 120),
    Model("B737-800", 200, 205, 0.8, (2800, 3200), ("A", "B", "STBY"), 12.0, 24.0,
          (110, 120), (395, 405), ("GEN1", "GEN2", "APU"), 600, 100),
    Model("E175-LR", 150, 174, 1.5, (2850, 3150), ("SYS1", "SYS2", "SYS3"), 8.0, 24.5,
          (112, 118), (390, 410), ("IDG1", "IDG2", "APU"), 600, 120),
    Model("ATR72-600", 58, 128, 1.0, (2900, 3100), ("BLUE", "GREEN"), 9.5, 25.5,
          (112, 118), (390, 410), ("ACW1", "ACW2"), 500, 90),
    Model("CRJ900-LR", 150, 168, 1.2, (2900, 3100), ("SYS1", "SYS2", "SYS3"), 10.0, 24.0,
          (112, 118), (395, 405), ("IDG1", "IDG2", "APU"), 500, 90),
]  # fmt: skip
TIRES = ("NLG-L", "NLG-R", "MLG-L1", "MLG-L2", "MLG-R1", "MLG-R2")
BRAKES = ("L1", "L2", "R1", "R2")
UNITS = [
    ("FMC-1", "822-1338-002"),
    ("ADIRU-2", "465-0217-011"),
    ("GCU-1", "731-5520-004"),
    ("TCAS", "940-0300-001"),
    ("XPDR-1", "066-5105-010"),
    ("DMU", "350-1143-006"),
]
BITE = {
    "advisory": [("31-32-05", "DMU memory 80% full"), ("23-73-02", "cabin PA volume low")],
    "caution": [("24-31-07", "battery charger fan degraded"), ("34-11-04", "pitot heat slow")],
    "warning": [("24-22-01", "IDG disconnect fault"), ("27-93-02", "flight control computer")],
}
OPERATORS = ["Northwind Air", "Cascade Regional", "Bluebird Airways", "Summit Express"]
CARRIERS = ["NW", "CR", "BB", "SX"]
STATIONS = ["BOS", "ORD", "DEN", "SEA", "ATL", "DFW", "PHX", "MSP"]
CLOSED_DEFECTS = ["reading light inop", "lavatory call chime inop", "galley oven 2 inop"]
OPEN_DEFECTS = ["APU bleed valve indication", "cabin temp sensor zone 2", "wing light left inop"]
BUNDLES: list[tuple[str, ...]] = [
    ("clean",),
    ("deferral_open",),
    ("tire_minor",),
    ("tire_major",),
    ("hydraulic",),
    ("battery_low",),
    ("inspection_days",),
    ("part_unregistered",),
    ("oil_low",),
    ("gen_volts",),
    ("boundaries",),
    ("mel_expired",),
    ("bite_caution",),
    ("brake_worn",),
    ("cert_expired",),
    ("tire_missing",),
    ("deferral_open", "tire_minor"),
    ("gen_hz",),
    ("part_mismatch",),
    ("inspection_hours",),
    ("clean",),
    ("bite_warning",),
    ("gen_missing",),
    ("part_no_release",),
    ("inspection_missing",),
    ("oil_low", "bite_caution"),
    ("old_unit_unregistered",),
    ("part_unserviceable",),
    ("mel_expired_category_a",),
    ("tire_major", "battery_low", "brake_worn"),
]
EXTRAS = ["tire_minor", "oil_low", "brake_worn", "battery_low", "mel_expired", "gen_volts"]
QUIET = {"clean", "deferral_open", "boundaries", "old_unit_unregistered"}


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    serials = count(40_000_000, 7)
    defects = count(1)
    tables: dict[str, list[dict]] = {
        name: []
        for name in ("aircraft", "mechanical", "electrical", "maintenance", "parts_registry")
    }
    tasks = []
    for i in range(TASK_COUNT):
        faults = set(BUNDLES[i % len(BUNDLES)])
        if not faults & QUIET and rng.random() < 0.25:
            faults.add(rng.choice(EXTRAS))
        model = MODELS[(i * 3 + i // 10) % len(MODELS)]
        tail = f"N{100 + i:03d}{chr(65 + i % 26)}{chr(65 + i // 26 % 26)}"
        departure = date(2026, 3, 2) + timedelta(days=rng.randrange(240))
        hours = round(rng.uniform(5000, 60000), 1)
        tables["aircraft"].append(_aircraft(rng, tail, model, departure, hours, faults))
        log = _maintenance(rng, tail, model, departure, hours, faults, defects)
        tables["maintenance"].append(log)
        tables["mechanical"].append(_mechanical(rng, tail, model, departure, faults))
        electrical, registry = _electrical(rng, tail, model, departure, log, faults, serials)
        tables["electrical"].append(electrical)
        tables["parts_registry"] += registry
        tasks.append(
            Task(
                id=f"aircraft_inspection-{i:03d}",
                domain="aircraft_inspection",
                inputs={
                    "tail_number": tail,
                    "flight_number": f"{rng.choice(CARRIERS)}{rng.randrange(10, 9999)}",
                    "departure_date": departure.isoformat(),
                    "departure_station": rng.choice(STATIONS),
                },
            )
        )
    frames = {name: pd.DataFrame(rows) for name, rows in tables.items()}
    frames["type_specs"] = pd.DataFrame([_spec(m) for m in MODELS])
    return GeneratedData(tables=frames, tasks=tasks)


def _spec(model: Model) -> dict:
    return {
        "aircraft_model": model.name,
        "nose_tire_nominal_psi": model.nose_psi,
        "main_tire_nominal_psi": model.main_psi,
        "brake_wear_pin_min_mm": model.pin_mm,
        "hydraulic_min_psi": model.hydraulic[0],
        "hydraulic_max_psi": model.hydraulic[1],
        "engine_oil_min_qt": model.oil_qt,
        "battery_min_volts": model.battery_v,
        "generator_min_volts": model.gen_volts[0],
        "generator_max_volts": model.gen_volts[1],
        "generator_min_hz": model.gen_hz[0],
        "generator_max_hz": model.gen_hz[1],
        "inspection_interval_hours": model.interval_hours,
        "inspection_interval_days": model.interval_days,
    }


def _aircraft(
    rng: random.Random, tail: str, model: Model, departure: date, hours: float, faults: set[str]
) -> dict:
    expiry = departure + timedelta(days=rng.randrange(10, 700))
    if "cert_expired" in faults:
        expiry = departure - timedelta(days=rng.randrange(1, 60))
    elif "boundaries" in faults:
        expiry = departure  # valid through its expiry date
    return {
        "tail_number": tail,
        "aircraft_model": model.name,
        "manufacturer_serial": f"MSN{rng.randrange(1000, 99999):05d}",
        "operator": rng.choice(OPERATORS),
        "airworthiness_cert_expiry": expiry.isoformat(),
        "total_flight_hours": hours,
        "total_cycles": int(hours / rng.uniform(1.2, 2.5)),
    }


def _maintenance(
    rng: random.Random,
    tail: str,
    model: Model,
    departure: date,
    hours: float,
    faults: set[str],
    defects: count,
) -> dict:
    days_since = rng.randrange(5, model.interval_days - 5)
    hours_since = rng.uniform(20, model.interval_hours - 20)
    if "inspection_days" in faults:
        days_since = model.interval_days + rng.randrange(1, 30)
    elif "boundaries" in faults:
        days_since = model.interval_days  # on the last permitted day
    if "inspection_hours" in faults:
        hours_since = model.interval_hours + rng.uniform(5, 80)
    last = departure - timedelta(days=days_since)
    items = []

    def item(category: str, age: int, interval: int | None, status: str, text: str) -> None:
        items.append(
            {
                "item_id": f"DD-{next(defects):05d}",
                "description": text,
                "mel_category": category,
                "deferred_on": (departure - timedelta(days=age)).isoformat(),
                "repair_interval_days": interval,
                "status": status,
            }
        )

    for _ in range(rng.randrange(0, 3)):  # closed items: history only
        item(rng.choice("BCD"), rng.randrange(20, 400), None, "closed", rng.choice(CLOSED_DEFECTS))
    if "deferral_open" in faults or (not faults & {"clean"} and rng.random() < 0.3):
        category = rng.choice("BCD")
        limit = {"B": 3, "C": 10, "D": 120}[category]
        item(category, rng.randrange(0, limit + 1), None, "open", rng.choice(OPEN_DEFECTS))
    if "boundaries" in faults:
        item("B", 3, None, "open", rng.choice(OPEN_DEFECTS))  # day 3 of 3: still valid
    if "mel_expired" in faults:
        category = rng.choice("BC")
        age = {"B": rng.randrange(4, 12), "C": rng.randrange(11, 30)}[category]
        item(category, age, None, "open", rng.choice(OPEN_DEFECTS))
    if "mel_expired_category_a" in faults:
        interval = rng.randrange(1, 5)
        item("A", interval + rng.randrange(1, 4), interval, "open", rng.choice(OPEN_DEFECTS))
    missing = "inspection_missing" in faults
    return {
        "tail_number": tail,
        "last_inspection_date": None if missing else last.isoformat(),
        "hours_at_last_inspection": None if missing else round(hours - hours_since, 1),
        "deferred_items": items,
    }


def _pressure(rng: random.Random, nominal: int, low: float, high: float) -> int:
    """An integer pressure whose deviation from nominal lies strictly inside (low, high) %."""
    candidates = [
        p for p in range(int(nominal * 0.7), int(nominal * 1.3) + 1)
        if low < abs(p - nominal) * 100 / nominal < high
        and (abs(p - nominal) * 1000) % nominal * 2 != nominal  # no x.x5: rounding is unambiguous
    ]  # fmt: skip
    return rng.choice(candidates)


def _mechanical(
    rng: random.Random, tail: str, model: Model, departure: date, faults: set[str]
) -> dict:
    tires = []
    for position in TIRES:
        nominal = model.nose_psi if position.startswith("NLG") else model.main_psi
        tires.append({"position": position, "pressure_psi": _pressure(rng, nominal, -1, 4.5)})
    bad_tire = rng.randrange(len(TIRES))
    if "tire_minor" in faults:
        nominal = model.nose_psi if bad_tire < 2 else model.main_psi
        tires[bad_tire]["pressure_psi"] = _pressure(rng, nominal, 5.5, 9.5)
    if "tire_major" in faults:
        nominal = model.nose_psi if bad_tire < 2 else model.main_psi
        tires[bad_tire]["pressure_psi"] = _pressure(rng, nominal, 11, 25)
    if "tire_missing" in faults:
        tires[(bad_tire + 1) % len(TIRES)]["pressure_psi"] = None
    brakes = [
        {"position": p, "wear_pin_mm": round(rng.uniform(model.pin_mm + 0.8, 12.0), 1)}
        for p in BRAKES
    ]
    if "brake_worn" in faults:
        rng.choice(brakes)["wear_pin_mm"] = round(rng.uniform(0.0, model.pin_mm - 0.3), 1)
    low, high = model.hydraulic
    systems = [
        {"system": s, "pressure_psi": rng.randrange(low + 40, high - 40)} for s in model.systems
    ]
    if "hydraulic" in faults:
        rng.choice(systems)["pressure_psi"] = rng.choice(
            [low - rng.randrange(150, 600), high + rng.randrange(60, 250)]
        )
    oil = [
        {"engine": e, "quantity_qt": round(rng.uniform(model.oil_qt + 1, model.oil_qt + 6), 1)}
        for e in ("ENG1", "ENG2")
    ]
    if "oil_low" in faults:
        rng.choice(oil)["quantity_qt"] = round(rng.uniform(model.oil_qt - 4, model.oil_qt - 0.5), 1)
    return {
        "tail_number": tail,
        "recorded_at": f"{departure}T{rng.randrange(4, 10):02d}:{rng.randrange(60):02d}:00Z",
        "tires": tires,
        "brakes": brakes,
        "hydraulic_systems": systems,
        "engine_oil": oil,
    }


def _generators(rng: random.Random, model: Model, faults: set[str]) -> list[dict]:
    (vlow, vhigh), (hlow, hhigh) = model.gen_volts, model.gen_hz
    gens = [
        {
            "generator": g,
            "volts": round(rng.uniform(vlow + 1, vhigh - 1), 1),
            "frequency_hz": round(rng.uniform(hlow + 1, hhigh - 1), 1),
        }
        for g in model.generators
    ]
    bad = rng.choice(gens)
    if "gen_volts" in faults:
        bad["volts"] = round(rng.choice([vlow - rng.uniform(3, 10), vhigh + rng.uniform(2, 6)]), 1)
    if "gen_hz" in faults:
        bad["frequency_hz"] = round(
            rng.choice([hlow - rng.uniform(3, 20), hhigh + rng.uniform(3, 20)]), 1
        )
    if "gen_missing" in faults:
        bad["volts"] = None
        bad["frequency_hz"] = None if rng.random() < 0.5 else bad["frequency_hz"]
    return gens


def _electrical(
    rng: random.Random,
    tail: str,
    model: Model,
    departure: date,
    log: dict,
    faults: set[str],
    serials: count,
) -> tuple[dict, list[dict]]:
    battery = round(rng.uniform(model.battery_v + 0.5, model.battery_v + 3.5), 1)
    if "battery_low" in faults:
        battery = round(rng.uniform(model.battery_v - 4, model.battery_v - 0.4), 1)
    messages = [
        {"code": code, "fault_class": "advisory", "text": text}
        for code, text in rng.sample(BITE["advisory"], rng.randrange(0, 3))
    ]
    for fault_class in ("caution", "warning"):
        if f"bite_{fault_class}" in faults:
            code, text = rng.choice(BITE[fault_class])
            messages.append({"code": code, "fault_class": fault_class, "text": text})

    last = log["last_inspection_date"]
    anchor = date.fromisoformat(last) if last else departure - timedelta(days=60)
    part_fault = next((f for f in faults if f.startswith("part_")), None)
    new_count = 1 + rng.randrange(2) if part_fault else rng.choice([0, 0, 1, 2])
    if "boundaries" in faults:
        new_count = max(new_count, 1)
    units, registry = [], []
    for n, (position, part_number) in enumerate(rng.sample(UNITS, rng.randrange(3, 5))):
        new = n < new_count
        if new:  # on or after the last inspection (the same day included)
            installed = anchor + timedelta(days=rng.randrange(0, (departure - anchor).days + 1))
            if "boundaries" in faults and n == 0:
                installed = anchor
        else:
            installed = anchor - timedelta(days=rng.randrange(1, 900))
        serial = f"SN{next(serials):08d}"
        units.append(
            {
                "position": position,
                "part_number": part_number,
                "serial_number": serial,
                "installed_on": installed.isoformat(),
            }
        )
        record = {
            "serial_number": serial,
            "part_number_on_record": part_number,
            "release_certificate_on_file": True,
            "registry_status": "serviceable",
        }
        suspect = (part_fault and n == 0) or ("old_unit_unregistered" in faults and not new)
        fault = part_fault if part_fault and n == 0 else "part_unregistered"
        if suspect and fault == "part_unregistered":
            continue
        if suspect and fault == "part_mismatch":
            record["part_number_on_record"] = part_number[:-3] + f"{int(part_number[-3:]) + 1:03d}"
        elif suspect and fault == "part_no_release":
            record["release_certificate_on_file"] = False
        elif suspect and fault == "part_unserviceable":
            record["registry_status"] = rng.choice(["unserviceable", "scrapped"])
        registry.append(record)
    rng.shuffle(units)
    electrical = {
        "tail_number": tail,
        "battery_volts": battery,
        "generators": _generators(rng, model, faults),
        "bite_messages": messages,
        "installed_units": units,
    }
    return electrical, registry
