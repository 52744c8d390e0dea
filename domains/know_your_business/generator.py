"""Seeded generator for the know-your-business dataset and the onboarding applications.

Every application starts as a clean, verifiable company; a scenario from a fixed rotation then
introduces at most one or two defects (a missing field, a dissolved company, a revoked tax id,
an expired licence, a corporate shareholder, a name close to a sanctions entry...). Labels are
not decided here: the reference policy derives them from what the tools return.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path

from sopgym.core.domain import GeneratedData
from sopgym.core.tasks import Task
from sopgym.domains.know_your_business.policy import REQUIRED_LICENSE

TASK_COUNT = 122
DOMAIN = "know_your_business"

# code -> (name, risk score); fictional jurisdictions, scores set by the compliance team
JURISDICTIONS = {
    "XA": ("Aldmere", 18),
    "XB": ("Brevia", 27),
    "XD": ("Dunmore", 33),
    "XG": ("Galloway Reach", 12),
    "XL": ("Lunmoor", 39),
    "XC": ("Calder Isles", 55),
    "XF": ("Farrowland", 46),
    "XM": ("Marrow Sound", 40),
    "XJ": ("Jorvik Bay", 64),
    "XE": ("Estrava", 78),
    "XH": ("Halvard", 86),
    "XK": ("Kessel Strand", 70),
}
LOW = ["XA", "XB", "XD", "XG", "XL"]
MEDIUM = ["XC", "XF", "XM", "XJ"]
HIGH = ["XE", "XH", "XK"]
UNREGULATED = ["software", "retail", "consulting", "manufacturing", "logistics"]
REGULATED = list(REQUIRED_LICENSE)
TRADE_WORDS = {
    "money_services": ["Payments", "Remit"],
    "pharmaceutical_wholesale": ["Pharma", "Medical Supply"],
    "alcohol_distribution": ["Wines", "Spirits"],
    "financial_advisory": ["Advisory", "Wealth"],
    "software": ["Software", "Digital"],
    "retail": ["Retail", "Stores"],
    "consulting": ["Consulting", "Partners"],
    "manufacturing": ["Manufacturing", "Works"],
    "logistics": ["Logistics", "Transport"],
}
BRAND_WORDS = [
    "Northwind",
    "Bluefield",
    "Harbor",
    "Silverline",
    "Greenway",
    "Summit",
    "Riverside",
    "Oakridge",
    "Lumen",
    "Crescent",
    "Brightpath",
    "Ironbridge",
    "Westmoor",
    "Clearwater",
    "Maple",
    "Granite",
    "Copperleaf",
    "Fairhaven",
    "Lakeshore",
    "Stonegate",
]
SUFFIXES = ["Ltd", "LLC", "GmbH", "BV", "SA", "Inc"]
FIRST = [
    "Amelia",
    "Benedikt",
    "Carmen",
    "Daniel",
    "Esther",
    "Felix",
    "Greta",
    "Henrik",
    "Isabel",
    "Jakob",
    "Klara",
    "Leon",
    "Marta",
    "Niklas",
    "Olivia",
    "Pavel",
    "Rosa",
    "Stefan",
    "Tilde",
    "Victor",
    "Wanda",
    "Yusuf",
    "Zofia",
    "Aaron",
]
LAST = [
    "Abbott",
    "Bergmann",
    "Carvalho",
    "Dalton",
    "Eriksen",
    "Fontaine",
    "Gallagher",
    "Hoffmann",
    "Ibsen",
    "Jansen",
    "Keller",
    "Lindgren",
    "Moreno",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quiroga",
    "Rasmussen",
    "Sato",
    "Thornton",
    "Ulrich",
    "Varga",
    "Whitfield",
    "Yilmaz",
]
STREETS = ["Harbour Road", "Mill Lane", "King Street", "Station Square", "Elm Avenue", "Quay Walk"]
CITIES = ["Port Aldous", "Wexbridge", "Carrow", "Linden Vale", "Southmere", "Old Tarn"]

# fictional sanctions entries: (name, party type, list)
SANCTIONED = [
    ("Radomir Vaskov", "individual", "Consolidated Financial Sanctions"),
    ("Ilse Marrow-Quint", "individual", "Consolidated Financial Sanctions"),
    ("Teodor Brankovic", "individual", "Counter-Terrorism Designations"),
    ("Casimir Oduya", "individual", "Consolidated Financial Sanctions"),
    ("Yevra Solanke", "individual", "Export Control Entity List"),
    ("Maksim Dreyfell", "individual", "Consolidated Financial Sanctions"),
    ("Orsolya Tarkanyi", "individual", "Counter-Terrorism Designations"),
    ("Lucan Ferreol", "individual", "Consolidated Financial Sanctions"),
    ("Hakim Zarrouk", "individual", "Export Control Entity List"),
    ("Petra Kolvane", "individual", "Consolidated Financial Sanctions"),
    ("Silas Montverde", "individual", "Counter-Terrorism Designations"),
    ("Anouk Vreeland", "individual", "Consolidated Financial Sanctions"),
    ("Dorian Castellane", "individual", "Export Control Entity List"),
    ("Mirela Voskuijl", "individual", "Consolidated Financial Sanctions"),
    ("Gunnar Halstrom", "individual", "Counter-Terrorism Designations"),
    ("Blackreef Maritime Holdings", "organization", "Consolidated Financial Sanctions"),
    ("Sarovan Arms Brokers", "organization", "Export Control Entity List"),
    ("Velkor Heavy Industries", "organization", "Export Control Entity List"),
    ("Ostrander Capital Partners", "organization", "Consolidated Financial Sanctions"),
    ("Kharon Freight FZE", "organization", "Counter-Terrorism Designations"),
    ("Nightjar Commodities", "organization", "Consolidated Financial Sanctions"),
    ("Redlake Precursor Chemicals", "organization", "Export Control Entity List"),
    ("Tessaly Shipping Co", "organization", "Consolidated Financial Sanctions"),
]
# spellings close to, but not exactly, a listed name (screen scores between 75 and 89)
NEAR_INDIVIDUALS = [
    "Rado Vaskovic",
    "Radek Vaskov",
    "Ilse Marrow",
    "Teo Brankovich",
    "Kasimir Odoya",
    "Maxim Dreyfel",
    "Orsi Tarkanyi",
    "Lukas Ferreol",
    "Hakeem Zarouk",
    "Mira Voskuil",
]
NEAR_ORGANIZATIONS = [
    "Blackreef Marine Holdings Ltd",
    "Velkor Heavy Industry GmbH",
    "Kharon Freight Ltd",
    "Nightjar Commodity Traders",
]
OWNER_SPLITS = [[100], [60, 40], [50, 30, 20], [70, 20, 10], [40, 35, 25], [55, 45]]

SCENARIOS = [
    "clean",
    "missing_tax_id",
    "inactive_dissolved",
    "name_mismatch",
    "tin_revoked",
    "license_missing",
    "corporate_owner",
    "owner_potential_match",
    "clean_address_omitted",
    "entity_high_risk",
    "registry_unknown",
    "license_expired",
    "undisclosed_shares",
    "owner_confirmed_match",
    "clean_regulated",
    "missing_registration",
    "address_mismatch",
    "tin_not_found",
    "tin_name_mismatch",
    "license_suspended",
    "entity_confirmed_match",
    "owner_high_risk_country",
    "clean_medium_risk",
    "inactive_suspended",
    "registry_wrong_jurisdiction",
    "missing_jurisdiction_and_tax",
    "entity_potential_match",
    "license_missing_and_potential_match",
    "clean_minor_owner_high_risk",
    "clean_license_on_expiry_day",
]
MISSING_FIELDS = {
    "missing_tax_id": ("tax_id",),
    "missing_registration": ("registration_number",),
    "missing_jurisdiction_and_tax": ("jurisdiction", "tax_id"),
}


def generate(seed: int, files_dir: Path) -> GeneratedData:
    import pandas as pd

    rng = random.Random(seed)
    rows: dict[str, list[dict]] = {
        "applications": [],
        "business_registry": [],
        "tax_records": [],
        "licenses": [],
        "ownership": [],
    }
    tasks = []
    for i in range(TASK_COUNT):
        scenario = SCENARIOS[i % len(SCENARIOS)]
        inputs = _company(rng, i, scenario, rows)
        rows["applications"].append(
            {
                "application_id": inputs["application_id"],
                "business_name": inputs["business_name"],
                "application_date": inputs["application_date"],
            }
        )
        for name in MISSING_FIELDS.get(scenario, ()):
            del inputs[name]
        tasks.append(Task(id=f"{DOMAIN}-{i:03d}", domain=DOMAIN, inputs=inputs))
    tables = {name: pd.DataFrame(records) for name, records in rows.items()}
    tables["sanctions_list"] = pd.DataFrame(
        [
            {"entry_id": f"SL-{1001 + n}", "name": name, "party_type": party, "list_name": listed}
            for n, (name, party, listed) in enumerate(SANCTIONED)
        ]
    )
    tables["jurisdictions"] = pd.DataFrame(
        [
            {"country_code": code, "name": name, "risk_score": score, "last_reviewed": "2025-11-30"}
            for code, (name, score) in JURISDICTIONS.items()
        ]
    )
    return GeneratedData(tables=tables, tasks=tasks)


def _company(rng: random.Random, i: int, scenario: str, rows: dict[str, list[dict]]) -> dict:
    """Create one company's records (clean, then the scenario's defect); return the inputs."""
    if "regulated" in scenario or "license" in scenario:
        business_type = rng.choice(REGULATED)
    elif scenario.startswith("clean"):
        business_type = rng.choice(UNREGULATED)
    else:
        business_type = rng.choice(REGULATED + UNREGULATED)
    brand = BRAND_WORDS[i % len(BRAND_WORDS)]
    legal_name = f"{brand} {rng.choice(TRADE_WORDS[business_type])} {rng.choice(SUFFIXES)}"
    if scenario == "entity_confirmed_match":
        legal_name = rng.choice([n for n, party, _ in SANCTIONED if party == "organization"])
    elif scenario == "entity_potential_match":
        legal_name = rng.choice(NEAR_ORGANIZATIONS)
    jurisdiction = rng.choice(
        HIGH
        if scenario == "entity_high_risk"
        else MEDIUM
        if scenario == "clean_medium_risk"
        else LOW
    )
    applied = date(2026, 1, 5) + timedelta(days=rng.randrange(300))
    address = f"{rng.randint(1, 240)} {rng.choice(STREETS)}, {rng.choice(CITIES)}"
    number = f"C{40000000 + i * 7919:08d}"
    tax_id = f"T{300000000 + i * 104729:09d}"

    rows["business_registry"].append(
        {
            "registration_number": number,
            "jurisdiction": jurisdiction,
            "legal_name": legal_name,
            "status": {"inactive_dissolved": "dissolved", "inactive_suspended": "suspended"}.get(
                scenario, "active"
            ),
            "incorporation_date": (applied - timedelta(days=rng.randrange(400, 6000))).isoformat(),
            "registered_address": address,
        }
    )
    if scenario != "tin_not_found":
        rows["tax_records"].append(
            {
                "tax_id": tax_id,
                "registered_name": (
                    f"{BRAND_WORDS[(i + 7) % len(BRAND_WORDS)]} Trading {rng.choice(SUFFIXES)}"
                    if scenario == "tin_name_mismatch"
                    else legal_name
                ),
                "status": "revoked" if scenario == "tin_revoked" else "active",
            }
        )
    if business_type in REQUIRED_LICENSE:
        _licenses(rng, i, number, REQUIRED_LICENSE[business_type], applied, scenario, rows)
    _owners(rng, number, jurisdiction, scenario, rows)

    inputs = {
        "application_id": f"KYB-{510000 + i * 13:06d}",
        "business_name": _as_written(rng, legal_name),
        "business_type": business_type,
        "registration_number": number,
        "jurisdiction": jurisdiction,
        "tax_id": tax_id,
        "registered_address": rng.choice([address, address.upper()]),
        "application_date": applied.isoformat(),
    }
    if scenario == "name_mismatch":  # applies under a trading name, not the legal name
        inputs["business_name"] = f"{BRAND_WORDS[(i + 3) % len(BRAND_WORDS)]} Direct"
    elif scenario == "address_mismatch":
        inputs["registered_address"] = (
            f"{rng.randint(241, 400)} {STREETS[i % len(STREETS)]}, " + (address.split(", ")[1])
        )
    elif scenario == "clean_address_omitted":
        del inputs["registered_address"]
    elif scenario == "registry_unknown":
        inputs["registration_number"] = f"C9{i:07d}"
    elif scenario == "registry_wrong_jurisdiction":
        inputs["jurisdiction"] = rng.choice([c for c in LOW if c != jurisdiction])
    return inputs


def _as_written(rng: random.Random, legal_name: str) -> str:
    """How an applicant might type the legal name: case and punctuation vary, spelling not."""
    return rng.choice([legal_name, legal_name.upper(), f"{legal_name}.", legal_name.lower()])


def _licenses(
    rng: random.Random,
    i: int,
    number: str,
    license_type: str,
    applied: date,
    scenario: str,
    rows: dict[str, list[dict]],
) -> None:
    if scenario.startswith("license_missing"):
        return
    issued = applied - timedelta(days=rng.randrange(200, 1500))
    if scenario == "license_expired":
        expiry, status = applied - timedelta(days=rng.randrange(1, 200)), "active"
    elif scenario == "license_suspended":
        expiry, status = applied + timedelta(days=rng.randrange(60, 700)), "suspended"
    elif scenario == "clean_license_on_expiry_day":
        expiry, status = applied, "active"
    else:
        expiry, status = applied + timedelta(days=rng.randrange(30, 900)), "active"
    held = [(issued, expiry, status)]
    if i % 3 == 0:  # an older licence of the same type that has lapsed
        held.append((issued - timedelta(days=1100), issued - timedelta(days=1), "active"))
    for n, (start, end, state) in enumerate(held):
        rows["licenses"].append(
            {
                "license_number": f"L-{number[1:]}-{n + 1}",
                "registration_number": number,
                "license_type": license_type,
                "status": state,
                "issued_date": start.isoformat(),
                "expiry_date": end.isoformat(),
            }
        )


def _owners(
    rng: random.Random, number: str, jurisdiction: str, scenario: str, rows: dict[str, list[dict]]
) -> None:
    split = list(rng.choice(OWNER_SPLITS))
    if scenario == "undisclosed_shares":
        split = [split[0] - rng.choice([5, 10, 15]), *split[1:]]
    if scenario == "clean_minor_owner_high_risk":
        split = [60, 30, 10]
    owners = [
        {
            "owner_name": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
            "owner_type": "individual",
            "ownership_percent": percent,
            "country": jurisdiction if rng.random() < 0.7 else rng.choice(LOW),
        }
        for percent in split
    ]
    if scenario == "corporate_owner":
        parent = f"{rng.choice(BRAND_WORDS)} Holdings {rng.choice(SUFFIXES)}"
        owners[0].update(owner_name=parent, owner_type="corporate")
    elif scenario in ("owner_potential_match", "license_missing_and_potential_match"):
        owners[0]["owner_name"] = rng.choice(NEAR_INDIVIDUALS)
    elif scenario == "owner_confirmed_match":
        owners[0]["owner_name"] = rng.choice(
            [n for n, party, _ in SANCTIONED if party == "individual"]
        )
    elif scenario == "owner_high_risk_country":
        owners[0]["country"] = rng.choice(HIGH)
    elif scenario == "clean_minor_owner_high_risk":
        owners[-1]["country"] = rng.choice(HIGH)
    for n, owner in enumerate(owners):
        rows["ownership"].append(
            {"holding_id": f"H-{number[1:]}-{n + 1}", "registration_number": number, **owner}
        )
