"""The benchmarks' own judging criteria, per question type, as rubrics an LLM judge applies.

Researchers compare a memory system with the numbers a benchmark publishes, and those numbers come from the
benchmark's own judge: LongMemEval grades each answer with a criterion chosen by question type, LoCoMo work
reports an LLM-judge accuracy ("J") that is lenient about form. An imported seed's reference carries the
criterion of its question (:class:`~ufuzz.model.Rubric` ``benchmark``/``question_type``/``criteria``), so the
judge of ``--llm-uses judge`` grades the seed the way the benchmark does and ``ufuzz status`` can show the
benchmark's own accuracy on the seeds beside the fuzzing findings.

The texts below are this project's wording of the published criteria (LongMemEval's evaluation script and
paper; the LLM-judge "J" score of the LoCoMo evaluations), not a copy of either benchmark's prompt. What each
says, in short:

* LongMemEval — right when the response gives the reference answer (or an equivalent, or the steps to it);
  only part of a required answer is wrong. Temporal reasoning: a day/week/month count off by one is right.
  Knowledge update: right when the latest value is given as current, even beside earlier values. Abstention
  questions: right when the response says the question cannot be answered.
* LoCoMo (J) — right when the response refers to the same thing as the reference however it is worded;
  temporal questions accept the same date or period in any format. Adversarial questions (category 5) are
  right when the response says it is not mentioned; the published J score leaves them out
  (:func:`in_score`).

A changed text is a new :data:`VERSION` of its benchmark: a reference names the version it carries, and the
judge's cache key changes with the text.
"""

from __future__ import annotations

from ufuzz.model import Rubric

#: the version of each benchmark's criteria texts (bump on any change of wording)
VERSION = {"longmemeval": "longmemeval-criteria/1", "locomo": "locomo-j/1"}

_LME_GENERAL = (
    "The response is right when it gives the reference answer, in any wording, or an answer equivalent to "
    "it, or works through steps that arrive at it. A response that gives only part of what the reference "
    "answer requires is wrong. A response that declines to answer or names something else is wrong.")

_LME = {
    "single-session-user": _LME_GENERAL,
    "single-session-assistant": _LME_GENERAL,
    "multi-session": _LME_GENERAL,
    "temporal-reasoning": _LME_GENERAL + (
        " When the answer is a number of days, weeks, months or years, a response whose number is off by one "
        "from the reference is still right (counting the end points differently is not a memory error)."),
    "knowledge-update": _LME_GENERAL + (
        " The user's information changed over time and the reference is its latest value. The response is "
        "right when it gives that latest value as the current one, even if it also mentions earlier values; "
        "it is wrong when it gives an earlier value as the current one."),
}

_LME_ABSTENTION = (
    "The question cannot be answered from the conversation history: it asks about something never said, or "
    "twists a detail that was said. The response is right when it says the question cannot be answered from "
    "what it knows (it does not know, it was never mentioned), also when it points out what was said "
    "instead; it is wrong when it answers the question as asked.")

_LOCOMO_GENERAL = (
    "Be lenient about form. The response is right when it refers to the same thing as the reference answer "
    "(the same person, place, object, activity, feeling or fact), however it is worded, whatever its length "
    "and even when it adds detail. It is wrong when it names something else, contradicts the reference, or "
    "does not answer.")

_LOCOMO = {
    "multi-hop": _LOCOMO_GENERAL,
    "open-domain": _LOCOMO_GENERAL,
    "single-hop": _LOCOMO_GENERAL,
    "temporal": _LOCOMO_GENERAL + (
        " The reference is a date, month, year or period. A response naming the same date or period in "
        "another format (7 May 2023, May 7, 2023, 2023-05-07), or with more or less detail that agrees with "
        "it (May 2023 for 7 May 2023, March 2022 for 2022), is right; a response naming another date or "
        "period is wrong."),
}

_LOCOMO_ADVERSARIAL = (
    "The question rests on a false premise (for example it asks about the other speaker) and the "
    "conversation does not answer it. The response is right when it says this was not mentioned or cannot "
    "be answered; it is wrong when it gives an answer.")

#: the question types a benchmark's published accuracy leaves out
_NOT_SCORED = {"locomo": frozenset({"adversarial"})}


def criteria_text(benchmark: str, question_type: str, abstain: bool) -> str | None:
    """The criterion for a question of ``question_type`` (an abstaining reference gets the benchmark's
    abstention criterion), or None for a benchmark or type this project has no criterion for."""
    if benchmark == "longmemeval":
        return _LME_ABSTENTION if abstain else _LME.get(question_type)
    if benchmark == "locomo":
        if abstain or question_type == "adversarial":
            return _LOCOMO_ADVERSARIAL
        return _LOCOMO.get(question_type)
    return None


def benchmark_rubric(benchmark: str, question_type: str, abstain: bool) -> Rubric | None:
    """The rubric an imported question's reference carries, or None without a criterion for it."""
    text = criteria_text(benchmark, question_type, abstain)
    if text is None:
        return None
    return Rubric(benchmark=benchmark, question_type=question_type, criteria=text,
                  criteria_version=VERSION[benchmark])


def in_score(benchmark: str, question_type: str | None) -> bool:
    """Whether a question of this type counts in the benchmark's published accuracy."""
    return question_type not in _NOT_SCORED.get(benchmark, frozenset())
