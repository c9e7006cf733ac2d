"""LongMemEval: abstention questions (decoys), labels on seeds, and S-sized haystacks (~50 sessions a question)."""

from __future__ import annotations

import json
import random

from tests.support.operator_kit import state_moves
from ufuzz.model import FuzzCase
from ufuzz.operators import all_operators
from ufuzz.operators.base import Rejected
from ufuzz.seeds.importers import import_file

TOPICS = ("a recipe for lentil soup", "fixing a bike chain", "a trip to Lisbon", "learning the cello",
          "a sourdough starter", "a budget spreadsheet", "houseplants that like shade", "a job interview")


def _session(rng: random.Random, sid: str, turns: int) -> list[dict]:
    topic = rng.choice(TOPICS)
    out = []
    for t in range(turns):
        role = "user" if t % 2 == 0 else "assistant"
        out.append({"role": role, "content": f"({sid}) About {topic}: point {t} of {turns}, "
                                             f"{'asking' if role == 'user' else 'answering'} in detail."})
    return out


def s_sized(qid: str, question: str, answer: str, fact_turn: str, *, sessions: int = 50, turns: int = 12,
            abstention: bool = False, seed: int = 0) -> dict:
    """One LongMemEval-S-like record: ``sessions`` haystack sessions, the one stating the fact among them."""
    rng = random.Random(seed)
    sids = [f"h{seed}_{i}" for i in range(sessions)]
    hay = [_session(rng, sid, turns) for sid in sids]
    at = rng.randrange(sessions)
    hay[at][2] = {"role": "user", "content": fact_turn, "has_answer": True}
    dates = [f"2023/{1 + i * 11 // sessions:02d}/{1 + i % 27:02d} (Mon) {9 + i % 9:02d}:00" for i in range(sessions)]
    return {"question_id": qid + ("_abs" if abstention else ""), "question_type": "single-session-user",
            "question": question, "answer": answer, "question_date": "2023/12/30 (Sat) 10:00",
            "haystack_dates": dates, "haystack_session_ids": sids, "haystack_sessions": hay,
            "answer_session_ids": [sids[at]]}


def test_abstention_turns_are_decoys_and_seeds_carry_their_labels(tmp_path):
    recs = [s_sized("q1", "What is the name of my hamster?", "Biscuit", "My hamster Biscuit loves seeds."),
            s_sized("q2", "What is the name of my hamster?", "You did not mention a hamster.",
                    "My cat Luna loves boxes.", abstention=True, seed=1)]
    path = tmp_path / "lme_s.json"
    path.write_text(json.dumps(recs))
    s = import_file("longmemeval", path).suite
    assert len(s.seeds) == 2
    by = {x.query.id: x for x in s.seeds}
    ans, abs_ = by["lme:q1"], by["lme:q2_abs"]
    assert len(s.checkpoint_of(ans).memories) == 50 * 12
    ref = s.reference_of(ans)
    assert ref.answer == "Biscuit" and ref.answer_form == "extractive" and ans.descriptor.memory_ops is None
    assert ans.metadata == {"question_type": "single-session-user"}
    aref = s.reference_of(abs_)
    assert aref.abstain and len(aref.invalidated) == 1  # the twisted fact's turn is a decoy
    assert s.checkpoint_of(abs_).memory(aref.invalidated[0]).text == "User: My cat Luna loves boxes."
    assert not abs_.query.fields.answerable and abs_.descriptor.memory_ops is None
    assert state_moves(abs_, s) == {"unrelated_edit"}


def test_every_move_offered_on_an_s_sized_question_is_carried_out(tmp_path):
    recs = [s_sized(f"q{i}", q, a, t, seed=i) for i, (q, a, t) in enumerate([
        ("What is the name of my hamster?", "Biscuit", "My hamster Biscuit loves seeds."),
        ("How many bikes do I own?", "3", "I own 3 bikes now, one for each season."),
        ("Where did I go for my last vacation?", "Porto", "My last vacation was in Porto, lovely food."),
    ])]
    path = tmp_path / "lme_s.json"
    path.write_text(json.dumps(recs))
    s = import_file("longmemeval", path).suite
    ops = all_operators()
    tried = 0
    for seed in s.seeds:
        case, ref = FuzzCase.from_seed(seed, s.checkpoint_of(seed)), s.reference_of(seed)
        for name in ("paraphrase", "target_change", "unsupported", "speaker_swap"):
            for t in ops[name].targets(case):
                tried += 1
                try:
                    m = ops[name].mutate(case, ref, t, random.Random(0))
                except Rejected as exc:  # pragma: no cover - reported below
                    raise AssertionError(f"{seed.id} {name} {t}: {exc}") from None
                assert ops[name].validate(case, m).ok, (seed.id, name, t, m.query.text)
        for name in ("update", "delete", "unrelated_edit"):
            assert isinstance(ops[name].targets(case), list)
    assert tried >= 6


def test_every_query_move_offered_on_the_real_subset_is_carried_out():
    import pytest

    from tests.seeds.test_locomo_annotations import SHARED, _every_offered_move_is_carried_out

    path = SHARED / "datasets" / "longmemeval" / "longmemeval_oracle_subset.json"
    if not path.exists():
        pytest.skip(f"LongMemEval subset not present at {path}")
    tried, bad = _every_offered_move_is_carried_out(import_file("longmemeval", path).suite)
    assert tried >= 100 and bad == []
