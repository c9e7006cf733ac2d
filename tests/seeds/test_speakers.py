"""Speakers: pronouns from annotations, re-wording a question about the other speaker, lexical support."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ufuzz.seeds.speakers import (
    has_gendered_pronoun,
    key_terms,
    pronoun_of,
    reword_about,
    stem,
    supports,
    swap_pronouns,
)


def test_pronoun_from_annotations_needs_a_clear_majority_and_ignores_texts_about_both():
    notes = ["Ana painted for her mother.", "Ana says she loves hiking.", "Ana walks her dog."]
    assert pronoun_of(notes, "Ana") == "she"
    assert pronoun_of(notes[:1], "Ana") is None  # too few
    assert pronoun_of(notes + ["Ana helps Ben with his shop, he is grateful to him."] * 3, "Ana") is None
    assert pronoun_of(notes + ["Ana helps Ben with his shop, he is grateful to him."] * 3, "Ana", ["Ben"]) == "she"
    assert pronoun_of(["Bo and his dog.", "Bo said he would."], "Bo", min_count=2) == "he"


def test_pronoun_swap_possessive_object_and_reflexive():
    assert swap_pronouns("What did Jon find for his store?", "he", "she") == "What did Jon find for her store?"
    assert swap_pronouns("What did her mom give her?", "she", "he") == "What did his mom give him?"
    assert swap_pronouns("Did Gina tell her about it?", "she", "he") == "Did Gina tell him about it?"
    assert swap_pronouns("Why did he push himself?", "he", "she") == "Why did she push herself?"
    assert swap_pronouns("Was the idea his?", "he", "she") == "Was the idea hers?"
    assert swap_pronouns("What did Ana paint?", None, None) == "What did Ana paint?"  # nothing to swap
    assert swap_pronouns("What did Ana paint for her mum?", None, "he") is None  # unknown: cannot word it


def test_reword_about_needs_the_name_written_out():
    assert reword_about("When did Jon's shop open?", "Jon", "Gina", "he", "she", strict=True) == \
        "When did Gina's shop open?"
    assert reword_about("When did the shop open?", "Jon", "Gina", "he", "she", strict=True) is None
    assert reword_about("When did Jon open his shop?", "Jon", "Wen", "he", None, strict=True) is None
    assert reword_about("When did Jon open his shop?", "Jon", "Wen", "he", None, strict=False) == \
        "When did Wen open his shop?"
    assert reword_about("Did Jonathan go?", "Jon", "Gina", "he", "she", strict=True) is None  # whole words


def test_key_terms_stems_and_support():
    assert key_terms("What did Caroline research?", ["Caroline", "Melanie"]) == {"research"}
    assert stem("activities") == stem("activity") and stem("pets") == stem("pet") and stem("running") == "run"
    assert supports("What pet does Melanie have?", ["Melanie: our pets are a dog and a cat"], ["Melanie"])
    assert not supports("What did Melanie research?", ["Melanie: I went running"], ["Melanie"])
    assert supports("What did Melanie buy?", ["Melanie: the Lean Startup is on my shelf"], ["Melanie"],
                    answers=["The Lean Startup"])
    assert supports("Who is Melanie?", ["anything"], ["Melanie"])  # no key term: nothing can be ruled out


NAMES = st.sampled_from(["Ana", "Ben", "Caroline", "Jon", "Gina"])
WORDS = st.lists(st.sampled_from(["what", "did", "his", "her", "he", "she", "store", "paint", "for", "the",
                                  "himself", "herself", "him", "to", "mother", "go", "hers"]), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(NAMES, NAMES, WORDS, st.sampled_from(["he", "she"]), st.sampled_from(["he", "she"]))
def test_reworded_text_names_the_new_speaker_only_and_keeps_no_pronoun_of_the_old_gender(old, new, words, po, pn):
    if old == new:
        return
    text = " ".join([words[0].capitalize(), old, *words[1:]]) + "?"
    got = reword_about(text, old, new, po, pn, strict=True)
    assert got is not None
    assert re.search(rf"\b{new}\b", got) and not re.search(rf"\b{old}\b", got)
    if po != pn:
        mine = ("he", "him", "his", "himself") if po == "he" else ("she", "herself", "hers")
        assert not any(re.search(rf"\b{w}\b", got, re.I) for w in mine)
    # everything but the name and pronouns is kept, word for word
    strip = lambda t: [w for w in re.findall(r"[A-Za-z']+", t) if w not in (old, new) and not has_gendered_pronoun(w)]  # noqa: E731
    assert strip(got) == strip(text)


def test_related_turns_share_a_key_term_with_the_question_or_the_answer():
    from ufuzz.seeds.speakers import related

    names = ["Jon", "Gina"]
    assert related("I lost my job as a banker last week.", "What did Jon do before losing his job?", "banker", names)
    assert related("I'm keen on counseling.", "Would Jon pursue writing?", "no; he wants to be a counselor", names)
    # an id typo or a reply that answers only with the turn before it
    assert not related("Wow! Did you see that band?", "Which transgender events did Gina attend?",
                       "a conference", names)
    assert not related("Yeah, awesome! Glad to be part of it.", "What is Jon's attitude to the festival?",
                       "positive", names)
    assert related("Anything at all", "Why?", "No.", names)  # nothing to compare: not ruled out
