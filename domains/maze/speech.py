"""What the simulated customer and the back office say, and how the reference policy reads it
back: each fact has one way of being said (with the paper's conversation devices layered on
top) and one way of being read, so every gold step comes from the words in the conversation.

Conversation devices (the "conversation" difficulty source): disfluent openings, automated-menu
prompts caught in a transcription, an intent that is reversed later, and sarcasm (a line whose
literal words say the opposite of what the customer wants). A customer claim that a
prerequisite is met, contradicted by the back office, is a "route" device.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from sopgym.types import JSON

FILLERS = ("uh, ", "um, ", "er, ", "you know, ")
MENU_PROMPTS = (
    " (automated menu: press 1 for billing, press 2 for everything else)",
    " (automated menu: your call may be recorded)",
    " (automated menu: say 'agent' at any time)",
)
REVERSALS = ("Actually, scratch that. ", "Wait, no. ", "Sorry, I misspoke. ")
CLAIMS = (
    "I'm sure I already sent that over yesterday.",
    "That should be done already, I did it last week.",
)
CHATTER = ("Hello? Is anyone there?", "Hi, I need some help please.", "Good morning.")
SESSION = "[system] Session opened on {date}."

_FILLER = re.compile(r"^(?:(?:uh|um|er|you know), )+", re.IGNORECASE)
_MENU = re.compile(r" \(automated menu: [^)]*\)")
_REVERSAL = re.compile("^(?:" + "|".join(re.escape(r) for r in REVERSALS) + ")")
_SESSION = re.compile(r"^\[system\] Session opened on (\d{4}-\d{2}-\d{2})\.$")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Choice:
    """A fact the customer states in words: one of ``phrases``' keys; ``sarcasm`` holds lines
    that mean a value while sounding like something else."""

    name: str
    phrases: dict[str, tuple[str, ...]]
    sarcasm: dict[str, str] = field(default_factory=dict)

    def say(self, value: str, rng: random.Random, sarcastic: bool) -> str:
        if sarcastic and value in self.sarcasm:
            return self.sarcasm[value]
        return rng.choice(self.phrases[value])


@dataclass(frozen=True)
class Note:
    """A fact the back office reports in a ``[system]`` note after the customer's ``prompt``
    line (a code typed in, a document sent)."""

    name: str
    lines: dict[str, str]
    prompt: tuple[str, ...]


@dataclass(frozen=True)
class DaysAgo:
    """Days between a date the customer gives and the session date (date arithmetic)."""

    name: str
    template: str  # with one {date}

    def say(self, days: int, today: dt.date) -> str:
        return self.template.format(date=(today - dt.timedelta(days=days)).isoformat())

    @property
    def pattern(self) -> re.Pattern[str]:
        head, _, tail = self.template.partition("{date}")
        return re.compile(f"^{re.escape(head)}(\\d{{4}}-\\d{{2}}-\\d{{2}}){re.escape(tail)}$")


@dataclass(frozen=True)
class Quotes:
    """The median of the prices the customer quotes (a median-based choice)."""

    name: str
    template: str  # with one {quotes}

    def say(self, median: int, rng: random.Random) -> str:
        spread = [median - rng.randint(5, 40), median, median + rng.randint(5, 40)]
        spread += [median - rng.randint(41, 60), median + rng.randint(41, 60)][: rng.choice([0, 2])]
        rng.shuffle(spread)
        return self.template.format(quotes=", ".join(f"${p}" for p in spread))

    @property
    def pattern(self) -> re.Pattern[str]:
        head, _, tail = self.template.partition("{quotes}")
        return re.compile(f"^{re.escape(head)}(.*){re.escape(tail)}$")


Fact = Choice | Note | DaysAgo | Quotes
WAITED = "waited_minutes"  # minutes from the customer's first line to the agent's first reply
CALCULATED = (DaysAgo, Quotes)


def noisy(text: str, rng: random.Random, filler: bool, menu: bool) -> str:
    return (
        (rng.choice(FILLERS) if filler else "") + text + (rng.choice(MENU_PROMPTS) if menu else "")
    )


@dataclass
class Reading:
    """What a partial conversation establishes: each fact's values in the order they came
    (the latest counts; loops count repeats), and the devices met on the way."""

    facts: dict[str, list[Any]]
    devices: set[str]


def _phrasebook(
    facts: list[Fact],
) -> tuple[dict[str, tuple[str, str]], set[str], dict[str, tuple[str, str]]]:
    """Customer lines -> (fact, value), the sarcastic lines, and back-office notes -> (fact,
    value)."""
    said: dict[str, tuple[str, str]] = {}
    sarcastic: set[str] = set()
    noted: dict[str, tuple[str, str]] = {}
    for fact in facts:
        if isinstance(fact, Choice):
            for value, lines in fact.phrases.items():
                said.update({line: (fact.name, value) for line in lines})
            said.update({line: (fact.name, v) for v, line in fact.sarcasm.items()})
            sarcastic.update(fact.sarcasm.values())
        elif isinstance(fact, Note):
            noted.update({line: (fact.name, value) for value, line in fact.lines.items()})
    return said, sarcastic, noted


def _plain(text: str) -> tuple[str, set[str]]:
    """A customer line without fillers, menu prompts and a reversal's opening, and which of
    those it had."""
    devices = set()
    plain = _MENU.sub("", _FILLER.sub("", text))
    if plain != text:
        devices.add("noise")
    if _REVERSAL.match(plain):
        plain = _REVERSAL.sub("", plain)
        devices.add("reversal")
    return plain, devices


def read(dialogue: list[JSON], facts: list[Fact]) -> Reading:
    """Read ``dialogue`` back into facts, as an agent following the SOP would."""
    said, sarcastic, noted = _phrasebook(facts)
    computed = [f for f in facts if isinstance(f, CALCULATED)]
    found: dict[str, list[Any]] = {}
    devices: set[str] = set()
    today = dt.date.min
    for turn in dialogue:
        text = turn["text"]
        if turn["role"] == "system":
            if match := _SESSION.match(text):
                today = dt.date.fromisoformat(match.group(1))
            elif text in noted:
                name, value = noted[text]
                found.setdefault(name, []).append(value)
            continue
        if turn["role"] != "customer":
            continue
        plain, marks = _plain(text)
        devices |= marks
        if plain in sarcastic:
            devices.add("sarcasm")
        if plain in CLAIMS:
            devices.add("claim")
        if plain in said:
            name, value = said[plain]
            found.setdefault(name, []).append(value)
            continue
        for fact in computed:
            if match := fact.pattern.match(plain):
                found.setdefault(fact.name, []).append(_value(fact, match.group(1), today))
    times = {t["role"]: t["time"] for t in reversed(dialogue) if t["role"] != "system"}
    if "agent" in times:  # the first customer line and the first agent reply
        found[WAITED] = [(_seconds(times["agent"]) - _seconds(times["customer"])) / 60]
    return Reading(found, devices)


def simplify(dialogue: list[JSON], facts: list[Fact]) -> list[JSON]:
    """The same conversation with only its deciding content (the paper's "simplified query"
    ablation): fillers, menu prompts and misleading claims go, a sarcastic line becomes the
    literal one, and a request later taken back goes with the agent's answers to it. The
    facts it establishes, and so its gold step, do not change."""
    said, _, _ = _phrasebook(facts)
    literal = {
        line: f.phrases[v][0]
        for f in facts
        if isinstance(f, Choice)
        for v, line in f.sarcasm.items()
    }
    stated = [
        said.get(_plain(t["text"])[0], ("", ""))[0] if t["role"] == "customer" else ""
        for t in dialogue
    ]
    kept: list[JSON] = []
    dropping = False
    for index, turn in enumerate(dialogue):
        if turn["role"] == "customer":
            plain = _plain(turn["text"])[0]
            fact = stated[index]
            dropping = bool(fact) and fact in stated[index + 1 :]  # taken back later
            if dropping or plain in CLAIMS:
                continue
            kept.append({**turn, "text": literal.get(plain, plain)})
        elif not (dropping and turn["role"] == "agent"):
            kept.append(turn)
    return kept


def _value(fact: DaysAgo | Quotes, raw: str, today: dt.date) -> int | float:
    if isinstance(fact, DaysAgo):
        return (today - dt.date.fromisoformat(raw)).days
    return statistics.median(float(n) for n in _NUMBER.findall(raw))


def _seconds(clock: str) -> int:
    hours, minutes, seconds = (int(part) for part in clock.split(":"))
    return hours * 3600 + minutes * 60 + seconds


def clock(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
