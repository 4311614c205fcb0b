"""Verify mode: a live outcome compared with its recording by meaning; nothing is written."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._errors import DriftError, StructuredOutputError
from ..fixtures._format import Fixture
from ..fixtures._verify import Difference, VerifyRules, compare_answers, compare_streams
from ..redact._redactor import shown_pointer
from ._codec import AnswerCodec, answer_json, error_type_name
from ._keying import Call
from ._lookup import StoreLookup, preview

__all__ = ["Verifier"]


def _schema_difference(problem: str) -> Difference:
    pointer, _, message = problem.partition(": ")
    return Difference("" if pointer == "(root)" else pointer,
                      f"live answer breaks the schema: {message}", None, None)


class Verifier:
    """Compares live outcomes with recordings; a drift is raised, or given to `on_drift`."""

    def __init__(self, lookup: StoreLookup, codec: AnswerCodec, rules: VerifyRules,
                 on_drift: Callable[[DriftError], None] | None) -> None:
        self.lookup = lookup
        self.codec = codec
        self.rules = rules
        self.on_drift = on_drift

    def _describe(self, difference: Difference) -> str:
        redactor = self.codec.redactor
        recorded, live = preview(difference.recorded, redactor), preview(difference.live, redactor)
        if difference.what == "member added":
            return f"member added (live {live})"
        if difference.what == "member removed":
            return f"member removed (recorded {recorded})"
        if difference.recorded is None and difference.live is None:
            return difference.what
        return f"{difference.what}: recorded {recorded} -> live {live}"

    def _drift(self, call: Call, differences: list[Difference]) -> None:
        if not differences:
            return
        error = DriftError(
            self.lookup.where(call.kind, call.key), call.kind, call.key,
            [(shown_pointer(d.pointer, self.codec.redactor), self._describe(d))
             for d in differences],
            how_to_record=self.lookup.how_to_rerecord,
        )
        if self.on_drift is None:
            raise error
        self.on_drift(error)

    def answer(self, call: Call, fixture: Fixture | None, answer: Any,
               schema: Mapping[str, Any] | None) -> Any:
        """The live answer, after comparing it with the recording."""
        data = answer_json(answer)
        problems = self.codec.schema_problems(schema, data)
        if fixture is not None:
            differences: list[Difference] = []
            if fixture.outcome == "answer":
                live = self.codec.redactor.redact(data)
                differences = compare_answers(call.kind, fixture.answer, live, self.rules)
                differences += [_schema_difference(p) for p in problems]
            elif fixture.outcome == "chunks":
                differences = [Difference("", "outcome stream -> answer", None, None)]
            elif not (problems and fixture.error is not None
                      and fixture.error.type == "StructuredOutputError"):
                recorded_type = fixture.error.type if fixture.error is not None else "error"
                differences = [Difference("", f"outcome error {recorded_type} -> answer",
                                          None, None)]
            self._drift(call, differences)
        if problems:
            raise StructuredOutputError(call.kind, problems, answer=data)
        return answer

    def failure(self, call: Call, fixture: Fixture | None, exc: BaseException,
                recordable: bool) -> None:
        """A live failure: compared with the recording only when it is recordable."""
        if fixture is None or not recordable:
            return
        live_type = error_type_name(exc)
        if fixture.outcome != "error":
            self._drift(call, [Difference("", f"outcome {fixture.outcome} -> error {live_type}",
                                          None, None)])
        elif fixture.error is not None and fixture.error.type != live_type:
            self._drift(call, [Difference("/type", "error type", fixture.error.type,
                                          live_type)])

    def chunks(self, call: Call, fixture: Fixture | None, collected: list[Any]) -> None:
        """Live chunks read to their end, compared with the recording."""
        if fixture is None:
            return
        live = self.codec.redactor.redact_stream(collected)
        if fixture.outcome == "chunks":
            differences = compare_streams(call.kind, fixture.chunks or [], live, self.rules)
        else:
            differences = [Difference("", f"outcome {fixture.outcome} -> stream", None, None)]
        self._drift(call, differences)
