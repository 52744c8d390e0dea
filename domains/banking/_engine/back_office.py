"""Non-financial back-office tools: the rest of a TELLER-sized catalog (paper A.3: about 280
APIs per scenario, most of them neither core nor financial).

They are defined as data. Each record kind of a bank's back office (meeting rooms, IT
tickets, fleet vehicles...) has a few categorical attributes, and every kind gets the same
three kinds of tool: ``get_<kind>`` (one record by id), ``list_<kinds>_by_<attribute>`` and
``count_<kinds>_by_<attribute>``. The records are a small synthetic dataset, seeded per kind,
so every call answers real, deterministic data; an unknown id is a ``not_found``.

No parameter shares a name with a scenario field (the packs' tests check it): in the stage-1
graph these tools are isolated nodes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from sopgym.core.tools import Tool, ToolContext, arguments_schema, not_found, result_schema, tool
from sopgym.types import JSON

RECORDS_PER_KIND = 24
LISTED_AT_MOST = 10

# attribute name -> its values (shared by the kinds that have it)
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "site": ("leeds", "london", "glasgow", "cardiff", "belfast"),
    "department": ("facilities", "it", "people", "legal", "marketing", "procurement"),
    "floor_level": ("ground", "first", "second", "third", "basement"),
    "condition": ("new", "good", "worn", "faulty", "retired"),
    "urgency": ("low", "normal", "high", "critical"),
    "channel": ("portal", "email", "phone", "walk_in"),
    "weekday": ("monday", "tuesday", "wednesday", "thursday", "friday"),
    "shift": ("early", "day", "late", "night"),
    "supplier_sector": ("catering", "cleaning", "stationery", "logistics", "software"),
    "delivery_mode": ("courier", "post", "van", "collection"),
    "workflow_state": ("open", "in_progress", "waiting", "done", "cancelled"),
    "room_size": ("small", "medium", "large", "auditorium"),
    "device_os": ("windows", "macos", "linux", "chromeos"),
    "seniority": ("junior", "mid", "senior", "lead", "head"),
    "audience": ("all_staff", "managers", "new_joiners", "contractors"),
    "fuel": ("petrol", "diesel", "hybrid", "electric"),
    "format": ("online", "classroom", "blended", "self_paced"),
    "season": ("spring", "summer", "autumn", "winter"),
}


@dataclass(frozen=True)
class RecordKind:
    name: str  # singular, snake case: "meeting_room"
    plural: str
    id_prefix: str
    what: str  # "a bookable meeting room", for the descriptions
    attributes: tuple[str, str, str, str]


KINDS: tuple[RecordKind, ...] = (
    RecordKind("meeting_room", "meeting_rooms", "MR", "a bookable meeting room",
               ("site", "floor_level", "room_size", "condition")),
    RecordKind("it_ticket", "it_tickets", "IT", "an IT service desk ticket",
               ("department", "urgency", "channel", "workflow_state")),
    RecordKind("laptop", "laptops", "LT", "a staff laptop in the asset register",
               ("site", "device_os", "condition", "department")),
    RecordKind("staff_member", "staff_members", "SM", "an entry of the staff directory",
               ("site", "department", "seniority", "shift")),
    RecordKind("supplier", "suppliers", "SU", "a back-office supplier",
               ("supplier_sector", "site", "delivery_mode", "workflow_state")),
    RecordKind("training_course", "training_courses", "TC", "an internal training course",
               ("format", "audience", "department", "season")),
    RecordKind("parking_bay", "parking_bays", "PB", "a staff parking bay",
               ("site", "floor_level", "fuel", "condition")),
    RecordKind("visitor_pass", "visitor_passes", "VP", "a visitor pass",
               ("site", "weekday", "department", "workflow_state")),
    RecordKind("hot_desk", "hot_desks", "HD", "a hot desk",
               ("site", "floor_level", "department", "condition")),
    RecordKind("printer", "printers", "PR", "a networked printer",
               ("site", "floor_level", "condition", "urgency")),
    RecordKind("software_licence", "software_licences", "SL", "a software licence seat",
               ("device_os", "department", "workflow_state", "season")),
    RecordKind("travel_booking", "travel_bookings", "TB", "a staff travel booking",
               ("site", "department", "weekday", "workflow_state")),
    RecordKind("catering_order", "catering_orders", "CO", "a catering order for a meeting",
               ("site", "weekday", "room_size", "workflow_state")),
    RecordKind("mail_shipment", "mail_shipments", "MS", "an outgoing mail shipment",
               ("site", "delivery_mode", "urgency", "workflow_state")),
    RecordKind("security_badge", "security_badges", "SB", "a building security badge",
               ("site", "department", "seniority", "condition")),
    RecordKind("fire_drill", "fire_drills", "FD", "a scheduled fire drill",
               ("site", "floor_level", "weekday", "season")),
    RecordKind("maintenance_job", "maintenance_jobs", "MJ", "a building maintenance job",
               ("site", "urgency", "shift", "workflow_state")),
    RecordKind("policy_document", "policy_documents", "PD", "an internal policy document",
               ("department", "audience", "workflow_state", "season")),
    RecordKind("staff_survey", "staff_surveys", "SS", "a staff engagement survey",
               ("department", "audience", "channel", "season")),
    RecordKind("job_opening", "job_openings", "JO", "an internal job opening",
               ("site", "department", "seniority", "workflow_state")),
    RecordKind("office_event", "office_events", "OE", "an office social or town-hall event",
               ("site", "audience", "weekday", "room_size")),
    RecordKind("cleaning_rota", "cleaning_rotas", "CR", "a cleaning rota slot",
               ("site", "floor_level", "shift", "weekday")),
    RecordKind("pool_vehicle", "pool_vehicles", "PV", "a vehicle of the staff car pool",
               ("site", "fuel", "condition", "urgency")),
    RecordKind("desk_phone", "desk_phones", "DP", "a desk phone extension",
               ("site", "department", "floor_level", "condition")),
    RecordKind("archive_box", "archive_boxes", "AB", "a box in the document archive",
               ("site", "department", "season", "delivery_mode")),
)  # fmt: skip

_LABEL_WORDS = (
    ("north", "south", "east", "west", "river", "park", "harbour", "market", "castle", "mill"),
    ("view", "court", "house", "wing", "point", "yard", "gate", "hall", "row", "works"),
)


def _records(kind: RecordKind) -> dict[str, JSON]:
    """The kind's synthetic records by id, the same in every process (seeded by its name)."""
    rng = random.Random(f"back-office|{kind.name}")
    records = {}
    for number in range(1, RECORDS_PER_KIND + 1):
        record_id = f"{kind.id_prefix}-{number:03d}"
        label = f"{rng.choice(_LABEL_WORDS[0]).title()} {rng.choice(_LABEL_WORDS[1]).title()}"
        records[record_id] = {f"{kind.name}_id": record_id, "label": label} | {
            a: rng.choice(ATTRIBUTES[a]) for a in kind.attributes
        }
    return records


def _title(name: str) -> str:
    return name.replace("_", " ")


def _get(kind: RecordKind, records: dict[str, JSON]) -> Tool:
    key = f"{kind.name}_id"
    first = next(iter(records))

    @tool(
        name=f"get_{kind.name}",
        description=f"The record of {kind.what}, by id: label, "
        f"{', '.join(_title(a) for a in kind.attributes)}.",
        input_schema=arguments_schema(
            {key: {"type": "string", "pattern": f"^{kind.id_prefix}-[0-9]{{3}}$"}},
            examples=[{key: first}],
        ),
        output_schema=result_schema(
            {key: {"type": "string"}, "label": {"type": "string"}}
            | {a: {"type": "string", "enum": list(ATTRIBUTES[a])} for a in kind.attributes}
        ),
    )
    def run(args: JSON, ctx: ToolContext) -> JSON:
        record = records.get(args[key])
        if record is None:
            raise not_found(_title(kind.name), key, args[key])
        return dict(record)

    return run


def _matching(records: dict[str, JSON], attribute: str, value: str) -> list[JSON]:
    return [r for r in records.values() if r[attribute] == value]


def _by(kind: RecordKind, records: dict[str, JSON], attribute: str, count: bool) -> Tool:
    key = f"{kind.name}_id"
    argument = {attribute: {"type": "string", "enum": list(ATTRIBUTES[attribute])}}
    example = [{attribute: ATTRIBUTES[attribute][0]}]
    if count:
        name = f"count_{kind.plural}_by_{attribute}"
        description = f"How many of the back office's {_title(kind.plural)} have a given " \
                      f"{_title(attribute)}."  # fmt: skip
        outputs: JSON = {attribute: {"type": "string"}, "count": {"type": "integer"}}
    else:
        name = f"list_{kind.plural}_by_{attribute}"
        description = f"The {_title(kind.plural)} with a given {_title(attribute)} (ids and " \
                      f"labels, at most {LISTED_AT_MOST}) and how many there are."  # fmt: skip
        outputs = {attribute: {"type": "string"}, "count": {"type": "integer"},
                   "items": {"type": "array", "items": {"type": "object"}}}  # fmt: skip

    @tool(name, description, arguments_schema(argument, examples=example), result_schema(outputs))
    def run(args: JSON, ctx: ToolContext) -> JSON:
        found = _matching(records, attribute, args[attribute])
        answer: JSON = {attribute: args[attribute], "count": len(found)}
        if not count:
            answer["items"] = [{key: r[key], "label": r["label"]} for r in found][:LISTED_AT_MOST]
        return answer

    return run


def _tools(kind: RecordKind) -> list[Tool]:
    records = _records(kind)
    return [
        _get(kind, records),
        *(_by(kind, records, a, count) for count in (False, True) for a in kind.attributes),
    ]


# one set of objects, shared by every scenario pack (each takes as many as its catalog needs)
BACK_OFFICE_TOOLS = [made for kind in KINDS for made in _tools(kind)]

PARAMETER_NAMES = frozenset(ATTRIBUTES) | {f"{kind.name}_id" for kind in KINDS}
