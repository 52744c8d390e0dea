"""tod/live: the simulated customer's fidelity (deterministic, never volunteers a fact, never
states another goal, objects to a write action its goal does not call for) and the reference
agent's conversations."""

from __future__ import annotations

import pytest

from sopgym.core.dialogue import user_turn
from sopgym.core.trajectory import CallRecord, Trajectory
from sopgym.domains.tod import language
from sopgym.domains.tod.intents import INTENTS
from sopgym.domains.tod.live.user import WRITES, reply
from sopgym.evaluation.scoring import score_episode
from tests.helpers import domain_data

NAME = "tod/live"
SEED = 7


def users() -> list[tuple[str, dict]]:
    data = domain_data(NAME)
    return [(task_id, gold.user) for task_id, gold in data.gold.items() if gold.user]


def say(profile: dict, task_id: str, text: str) -> tuple[str, bool]:
    opening = {"role": "user", "content": user_turn(reply, profile, SEED, task_id, []).content}
    turn = user_turn(reply, profile, SEED, task_id, [opening, {"role": "agent", "content": text}])
    return turn.content, turn.done


def text_facts(profile: dict) -> dict[str, str]:
    return {k: v for k, v in profile["facts"].items() if isinstance(v, str)}


def test_every_task_has_a_profile_and_the_replies_are_deterministic() -> None:
    data = domain_data(NAME)
    assert len(users()) == len(data.tasks) == 252
    task_id, profile = users()[0]
    ask = language.ASK[profile["language"]]["account_id"]
    assert say(profile, task_id, ask) == say(profile, task_id, ask)


@pytest.mark.parametrize("message", ["Let me check that for you.", "Un momento, por favor.",
                                     "Je regarde cela."])  # fmt: skip
def test_the_customer_never_volunteers_a_fact(message: str) -> None:
    for task_id, profile in users():
        content, done = say(profile, task_id, message)
        assert not done
        assert not any(value in content for value in text_facts(profile).values()), content
        assert profile["says"] in content  # it restates its goal instead


def test_the_customer_answers_exactly_what_is_asked() -> None:
    for task_id, profile in users():
        for fact, value in profile["facts"].items():
            content, _ = say(profile, task_id, language.ASK[profile["language"]][fact])
            assert content == language.say_fact(profile["language"], profile["phrasing"], value)
            others = [v for k, v in text_facts(profile).items() if k != fact and v != value]
            assert not any(v in content for v in others), (fact, content)
        # asked in English while the conversation is in another language: still understood
        content, _ = say(profile, task_id, language.ASK["en"]["order_id"])
        assert profile["facts"]["order_id"] in content


def test_the_customer_never_states_another_goal() -> None:
    others_said = {i.name: set(i.says.values()) for i in INTENTS}
    for task_id, profile in users()[:60]:
        for message in ("Hello?", language.ASK[profile["language"]]["email"],
                        "Done: cancel_order. Anything else?"):  # fmt: skip
            content, _ = say(profile, task_id, message)
            mine = {n for n, says in others_said.items() if profile["says"] in says}
            for name, says in others_said.items():
                if name not in mine:
                    assert not any(s in content for s in says), (name, content)


def test_the_customer_objects_to_a_write_it_did_not_ask_for() -> None:
    objected = 0
    for task_id, profile in users():
        lang = profile["language"]
        closing = language.CLOSING_AGENT[lang]
        wrong = next(a for a in WRITES if a not in profile["expects"])
        content, done = say(profile, task_id, f"Done: {wrong}. {closing}")
        assert not done and profile["says"] in content
        assert content == language.OBJECTION[lang].format(says=profile["says"])
        objected += 1
        right = ", ".join(profile["expects"])
        content, done = say(profile, task_id, f"Done: {right}. {closing}")
        assert done and content in language.CLOSING_USER[lang]
    assert objected == 252


def test_the_reference_conversations_end_with_the_customer_satisfied() -> None:
    data = domain_data(NAME)
    for gold in data.gold.values():
        assert gold.user is not None
        assert gold.messages[-1]["role"] == "user"
        assert gold.messages[-1]["content"] in language.CLOSING_USER[gold.user["language"]]
        assert not any(m["content"].startswith(tuple(language.OBJECTION[lang][:10]
                                                     for lang in language.OBJECTION))
                       for m in gold.messages if m["role"] == "user")  # fmt: skip
        writes = sorted({c.name for c in gold.calls} & set(WRITES))
        assert writes == gold.user["expects"]


def test_right_answer_and_state_with_an_extra_call_is_no_wrong_final() -> None:
    """An episode whose answer and final state are the gold's but whose calls are not (a
    lookup made twice: ``actions`` fails) failed on its procedure: ``wrong_procedure``, not
    ``wrong_final``, which says the answer or the state was wrong."""
    data = domain_data(NAME)
    task = data.tasks[0]
    gold = data.gold[task.id]
    calls = [CallRecord(c.name, c.arguments, 200) for c in gold.calls]
    calls.insert(1, CallRecord(gold.calls[0].name, gold.calls[0].arguments, 200))
    episode = Trajectory(task.id, "ep", calls, True, dict(gold.outputs),
                         final_state=gold.final_state)  # fmt: skip
    score = score_episode(data.domain, task, episode, gold)
    assert not score.success and score.scores["actions"]["value"] == 0.0
    assert score.scores["output_fields"]["value"] == score.scores["final_state"]["value"] == 1.0
    assert score.errors == {"wrong_procedure": 1}
    wrong = Trajectory(task.id, "ep", calls, True, {"section": "not_a_section"},
                       final_state=gold.final_state)  # fmt: skip
    assert score_episode(data.domain, task, wrong, gold).errors == {"wrong_final": 1}
