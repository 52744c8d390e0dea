"""Seeded generator for the patient intake dataset and task inputs.

Scenarios rotate deterministically so every SOP branch appears several times; the labels
are not decided here: the reference policy derives them from what the tools return.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path
from typing import TypedDict

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task
from sopgym.types import JSON

TASK_COUNT = 96
PROVIDERS = ["Aetna", "Cigna", "UnitedHealthcare", "Humana", "Kaiser Permanente", "Medicare"]
FIRST = [
    "Ana",
    "Ben",
    "Chloe",
    "Dev",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kemi",
    "Liam",
    "Maya",
    "Noor",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sami",
    "Tara",
]
LAST = [
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Tanaka",
    "Silva",
    "Novak",
    "Haddad",
    "Kowalski",
    "Brennan",
    "Achebe",
    "Ferreira",
    "Iyer",
]
CONDITIONS = [
    "hypertension",
    "type 2 diabetes",
    "asthma",
    "COPD",
    "chronic kidney disease",
    "heart failure",
    "arthritis",
]
ALLERGIES = ["penicillin", "latex", "peanuts", "sulfa drugs", "none recorded"]
STREETS = ["Main St", "Oak Ave", "Maple Dr", "Harbor Rd", "Elm St", "Cedar Ln"]
CITIES = [
    ("Boston", "MA", "02108"),
    ("Austin", "TX", "73301"),
    ("Denver", "CO", "80202"),
    ("Columbus", "OH", "43004"),
]
CHAINS = ["CVS Pharmacy", "Walgreens", "Rite Aid", "Community Care Pharmacy", "HealthMart"]

# Rotations guarantee coverage of every branch; the policy decides what each one means.
INSURANCE_SCENARIOS = [
    "valid",
    "valid",
    "lapsed",
    "valid",
    "provider_mismatch",
    "valid",
    "not_found",
    "outside_window",
    "valid",
    "holder_mismatch",
]
RX_SCENARIOS = ["full", "partial", "absent", "unknown_id", "full", "partial"]
PHARMACY_SCENARIOS = [
    "preferred",
    "standard",
    "missing",
    "out_of_network",
    "not_accepting",
    "unlisted",
    "preferred",
    "missing_phone",
]
LIFESTYLES = [  # (smoking, alcohol, exercise) spanning low, moderate and high points
    ("Never", "None", "5+ times"),
    ("Never", "Occasional", "1-2 times"),
    ("Former", "Moderate", "1-2 times"),
    ("Current", "Occasional", "3-4 times"),
    ("Current", "Heavy", "None"),
    ("Former", "Heavy", "None"),
    ("Never", "Moderate", "None"),
    ("Current", "Moderate", "1-2 times"),
    ("Never", "None", "3-4 times"),
]


class Policy(TypedDict):
    """A ``policies`` row."""

    policy_number: str
    policy_status: str
    provider_on_file: str
    holder_patient_id: str
    coverage_start: str
    coverage_end: str


class Pharmacy(TypedDict):
    """A ``pharmacies`` row (the pharmacy directory)."""

    pharmacy_id: str
    name: str
    address: str
    phone: str
    network_participation: str
    accepting_prescriptions: bool


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    patients: list[JSON] = []
    policies: list[Policy] = []
    plans: list[JSON] = []
    pharmacies: list[Pharmacy] = []
    tasks: list[Task] = []
    for i in range(TASK_COUNT):
        pid = f"P{100000000 + i * 7919:09d}"
        visit = date(2026, 1, 5) + timedelta(days=rng.randrange(300))
        birth = visit - timedelta(days=rng.randrange(18 * 365, 90 * 365))
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        provider = rng.choice(PROVIDERS)
        policy_number = f"{provider[:3].upper()}-{100000 + i * 37:06d}"
        patients.append(
            {
                "patient_id": pid,
                "full_name": name,
                "date_of_birth": birth.isoformat(),
                "allergies": rng.choice(ALLERGIES),
                "open_registration": i % 11 == 5,
            }
        )
        policies.append(
            _policy(
                rng,
                INSURANCE_SCENARIOS[i % len(INSURANCE_SCENARIOS)],
                pid,
                provider,
                policy_number,
                visit,
            )
        )
        inputs: JSON = {
            "patient_id": pid,
            "patient_name": name,
            "date_of_birth": birth.isoformat(),
            "visit_date": visit.isoformat(),
            "insurance_provider": provider,
            "policy_number": policy_number,
        }
        rx = RX_SCENARIOS[i % len(RX_SCENARIOS)]
        if rx != "absent":
            inputs["rx_member_id"] = f"RX{2000000 + i:07d}"
            if rx != "unknown_id":
                generic, brand = (
                    (rng.choice([0, 5, 10]), rng.choice([15, 20, 25]))
                    if rx == "full"
                    else (rng.choice([15, 20, 30]), rng.choice([30, 40, 50]))
                )
                plans.append(
                    {
                        "rx_member_id": inputs["rx_member_id"],
                        "plan_tier": rng.choice(["gold", "silver", "bronze"]),
                        "generic_copay_percent": generic,
                        "brand_copay_percent": brand,
                    }
                )
        smoking, alcohol, exercise = LIFESTYLES[(i * 5) % len(LIFESTYLES)]
        inputs.update(
            smoking_status=smoking,
            alcohol_consumption=alcohol,
            exercise_frequency=exercise,
            past_surgeries=rng.choice([0, 0, 1, 2, 3, 5]),
            chronic_conditions=rng.sample(CONDITIONS, rng.choice([0, 0, 1, 1, 2, 3])),
        )
        inputs.update(
            _pharmacy(rng, PHARMACY_SCENARIOS[i % len(PHARMACY_SCENARIOS)], i, pharmacies)
        )
        tasks.append(Task(id=f"patient_intake-{i:03d}", domain="patient_intake", inputs=inputs))
    # a few directory entries nobody asks about, so lookups are not trivially unique
    for j in range(12):
        _pharmacy(rng, "preferred", 1000 + j, pharmacies)
    return GeneratedData(
        tables={
            "patients": pd.DataFrame(patients),
            "policies": pd.DataFrame(policies),
            "rx_plans": pd.DataFrame(plans),
            "pharmacies": pd.DataFrame(pharmacies),
        },
        tasks=tasks,
    )


def _policy(
    rng: random.Random, scenario: str, pid: str, provider: str, number: str, visit: date
) -> Policy:
    start = visit - timedelta(days=rng.randrange(30, 700))
    end = visit + timedelta(days=rng.randrange(30, 400))
    status, provider_on_file, holder = "active", provider, pid
    if scenario == "lapsed":
        status = "lapsed"
    elif scenario == "provider_mismatch":
        provider_on_file = next(p for p in PROVIDERS if p != provider)
    elif scenario == "holder_mismatch":
        holder = f"P{999000000 + rng.randrange(999):09d}"
    elif scenario == "outside_window":
        end = visit - timedelta(days=rng.randrange(1, 90))
        start = end - timedelta(days=365)
    elif scenario == "not_found":
        number = number.replace("-", "-9")[:10]  # stored under another number
    return {
        "policy_number": number,
        "policy_status": status,
        "provider_on_file": provider_on_file,
        "holder_patient_id": holder,
        "coverage_start": start.isoformat(),
        "coverage_end": end.isoformat(),
    }


def _pharmacy(
    rng: random.Random, scenario: str, i: int, directory: list[Pharmacy]
) -> dict[str, str]:
    """The intake form's pharmacy fields for ``scenario``; the pharmacy joins ``directory``
    unless the scenario says it is unlisted."""
    if scenario == "missing":
        return {}
    street, (city, state, zip_code) = rng.choice(STREETS), rng.choice(CITIES)
    entry: Pharmacy = {
        "pharmacy_id": f"PH{5000 + i:05d}",
        "name": f"{rng.choice(CHAINS)} #{100 + i}",
        "address": f"{10 + i} {street}, {city}, {state} {zip_code}",
        "phone": f"{200 + i % 700:03d}-555-{1000 + i:04d}",
        "network_participation": {
            "preferred": "preferred",
            "standard": "standard",
            "out_of_network": "none",
        }.get(scenario, "preferred"),
        "accepting_prescriptions": scenario != "not_accepting",
    }
    if scenario != "unlisted":
        directory.append(entry)
    form = {
        "pharmacy_name": entry["name"],
        "pharmacy_address": entry["address"],
        "pharmacy_phone": entry["phone"],
    }
    if scenario == "missing_phone":
        del form["pharmacy_phone"]
    return form
