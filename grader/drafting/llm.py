"""The LLM drafter: one instructor call per criterion and sample, through litellm, held to the evidence.

Flow per criterion: applicability and basis checks (no model call when the rubric already decides),
evidence packing (`grader.prompting`), k samples (each through `instructor.from_litellm` with the
per-criterion response model and the validation context), reduction (`sampling`), guards
(`guards`). Transport retries, the budget, the concurrency bound and the call record live in
`_Caller`, the completion function handed to instructor, so every HTTP attempt is recorded and
re-asks and retries never multiply. Failures end as `unscored` with the reason; the raw replies stay
in the record.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any, Coroutine, TypeVar

from pydantic import ValidationError

from evidence.model import EvidenceBundle, kind_matches
from evidence.submission import Submission
from grader.draft import Citation, CriterionDraft, Draft, DrafterInfo, DraftRecord, Flag
from grader.drafting._litellm import load_litellm
from grader.drafting.base import envelope, not_applicable, not_applicable_reason
from grader.drafting.cache import SampleCache, cache_key
from grader.drafting.cost import BudgetExceeded, Ledger, call_cost, usage_of
from grader.drafting.guards import evidence_flags, injection_flags
from grader.drafting.llm_schema import Verdict, VerdictContext, verdict_model
from grader.drafting.retry import NO_PROVIDER_RETRIES, RetryPolicy, is_transient
from grader.drafting.rules import INSUFFICIENT
from grader.drafting.sampling import SampleResult, reduce_samples, to_citations
from grader.errors import GraderError
from grader.prompting import PackedPrompt, litellm_counter, load_templates, messages_hash, pack_criterion
from grader.rubric import Criterion, Rubric
from grader.settings import LLMMode, Settings

LLM_DRAFTER_VERSION = "1.0.0"
RAW_TEXT_LIMIT = 20_000  # characters of a raw reply kept in the record
T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from synchronous code, even when this thread has a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _hash(obj: Any) -> str:
    canon = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(canon.encode()).hexdigest()


@cache
def _schema_hash(model_cls: type[Verdict]) -> str:
    return _hash(model_cls.model_json_schema())


def _raw_reply(resp: Any) -> dict[str, Any]:
    """What the model said, compactly: content, tool calls, finish reason, model id and fingerprint."""
    try:
        choice = resp.choices[0]
        msg = choice.message
        calls = [{"name": tc.function.name, "arguments": (tc.function.arguments or "")[:RAW_TEXT_LIMIT]}
                 for tc in (getattr(msg, "tool_calls", None) or [])]
        content = msg.content[:RAW_TEXT_LIMIT] if isinstance(msg.content, str) else msg.content
        finish = choice.finish_reason
    except (AttributeError, IndexError, TypeError):
        return {"unreadable": str(resp)[:RAW_TEXT_LIMIT]}
    return {"id": getattr(resp, "id", None), "model": getattr(resp, "model", None),
            "system_fingerprint": getattr(resp, "system_fingerprint", None), "finish_reason": finish,
            "content": content, "tool_calls": calls}


def _error_record(exc: BaseException) -> dict[str, Any]:
    body = getattr(getattr(exc, "response", None), "text", None)
    return {"type": type(exc).__name__, "status_code": getattr(exc, "status_code", None),
            "message": str(exc)[:2000], "transient": is_transient(exc),
            "body": body[:RAW_TEXT_LIMIT] if isinstance(body, str) else None}


def _feedback(messages: list[Any], initial: int) -> str | None:
    """The validation error instructor appended for a re-ask (the last message beyond the prompt)."""
    if len(messages) <= initial:
        return None
    last = messages[-1]
    content = last.get("content") if isinstance(last, dict) else getattr(last, "content", None)
    return str(content)[:4000] if content is not None else None


def _failure_reason(exc: BaseException, reasks: int) -> str:
    """One line: why a sample has no verdict. Walks instructor's wrapper to the real cause."""
    cause: BaseException = exc
    while cause.__cause__ is not None and type(cause).__name__ in ("InstructorRetryException", "RetryError"):
        cause = cause.__cause__
    if isinstance(cause, BudgetExceeded):
        return cause.message
    if isinstance(cause, ValidationError):
        errs = "; ".join(str(e.get("msg", "")) for e in cause.errors()[:3])
        return f"reply failed validation after {reasks + 1} attempt(s): {errs}"
    if isinstance(cause, json.JSONDecodeError) or type(cause).__name__ in ("ResponseParsingError", "IncompleteOutputException"):
        return f"reply could not be parsed after {reasks + 1} attempt(s): {str(cause).splitlines()[0][:300]}"
    if is_transient(cause):
        return f"model call failed after retries: {type(cause).__name__}: {str(cause).splitlines()[0][:300]}"
    return f"model call failed: {type(cause).__name__}: {(str(cause).splitlines() or [''])[0][:300]}"


class _Caller:
    """The completion function instructor calls: budget check, bounded concurrency, retries, record."""

    def __init__(self, drafter: LLMDrafter, ledger: Ledger, limiter: asyncio.Semaphore,
                 criterion_id: str, sample: int, initial_messages: int) -> None:
        self.drafter = drafter
        self.ledger = ledger
        self.limiter = limiter
        self.criterion_id = criterion_id
        self.sample = sample
        self.initial = initial_messages
        self.calls: list[dict[str, Any]] = []

    async def complete(self, *args: Any, **kwargs: Any) -> Any:
        litellm = load_litellm()
        policy = self.drafter.policy
        messages = list(kwargs.get("messages") or [])
        kwargs.update(NO_PROVIDER_RETRIES)
        kwargs.setdefault("drop_params", True)  # e.g. `seed` on providers without it: dropped, not an error
        kwargs.update(self.drafter.endpoint)
        feedback = _feedback(messages, self.initial)
        started = time.monotonic()
        async for attempt in policy.transport():
            with attempt:
                self.ledger.check()
                remaining = policy.deadline_s - (time.monotonic() - started)
                entry: dict[str, Any] = {
                    "criterion": self.criterion_id, "sample": self.sample, "call": len(self.calls) + 1,
                    "messages_hash": _hash(messages), "reask_feedback": feedback, "cached": False,
                }
                async with self.limiter:
                    t0 = time.monotonic()
                    try:
                        resp = await litellm.acompletion(*args, timeout=max(0.05, min(policy.timeout_s, remaining)), **kwargs)
                    except Exception as exc:
                        entry.update(latency_s=round(time.monotonic() - t0, 4), error=_error_record(exc), raw=None)
                        self.calls.append(entry)
                        self.ledger.failed()
                        raise
                usage = usage_of(resp)
                cost = call_cost(self.drafter.model, usage, self.drafter.settings)
                self.ledger.add(usage, cost)
                entry.update(latency_s=round(time.monotonic() - t0, 4), error=None, raw=_raw_reply(resp),
                             usage=usage, cost_usd=cost)
                self.calls.append(entry)
                return resp
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover


class LLMDrafter:
    """Drafts every criterion of a rubric with a model; synchronous `draft`, async `adraft`."""

    name = "llm"
    version = LLM_DRAFTER_VERSION

    def __init__(self, settings: Settings) -> None:
        if not settings.model:
            raise GraderError("the llm drafter needs a model: pass --model or set GRADER_MODEL")
        self.settings = settings
        self.model: str = settings.model
        self.policy = RetryPolicy.from_settings(settings)
        self.samples = settings.samples
        self.temperature = settings.temperature
        self.seed = settings.seed
        self.max_concurrency = settings.max_concurrency
        self.max_prompt_tokens = settings.max_prompt_tokens
        self.mode_name = LLMMode(settings.llm_mode).value
        self.cache = SampleCache(settings.cache_dir, settings.use_cache)
        self.templates = load_templates(settings.prompt_dirs())
        self.endpoint = {k: v for k, v in (("api_base", settings.api_base), ("api_key", settings.api_key)) if v}
        self._limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()

    # -- public ------------------------------------------------------------------------------
    def draft(self, submission: Submission, bundle: EvidenceBundle, rubric: Rubric) -> Draft:
        return run_sync(self.adraft(submission, bundle, rubric))

    async def adraft(self, submission: Submission, bundle: EvidenceBundle, rubric: Rubric) -> Draft:
        """Concurrent drafting of all criteria; drafts sharing one event loop share the concurrency bound."""
        ledger = Ledger(self.settings.budget_usd)
        counter = litellm_counter(self.model)
        outcomes = await asyncio.gather(*(self._criterion(c, submission, bundle, rubric, ledger, counter) for c in rubric.criteria))
        criteria = [o[0] for o in outcomes]
        calls = [call for o in outcomes for call in o[1]]
        prompt_hashes: dict[str, str] = {}
        for _, _, packed in outcomes:
            if packed is not None:
                prompt_hashes.update(packed.template_hashes)
                prompt_hashes[f"messages:{packed.criterion_id}"] = packed.messages_hash
        usage = dict(ledger.totals)
        record = DraftRecord(prompt_hashes=prompt_hashes, seed=self.seed, calls=tuple(calls), usage=usage,
                             cost_usd=round(ledger.spent_usd, 8))
        raws = [c["raw"] for c in calls if c.get("raw")]
        info = DrafterInfo(name=self.name, version=self.version, model=self.model, params={
            "samples": self.samples, "temperature": self.temperature, "seed": self.seed, "mode": self.mode_name,
            "max_reasks": self.policy.reasks, "transport_attempts": self.policy.transport_attempts,
            "timeout_s": self.policy.timeout_s, "deadline_s": self.policy.deadline_s,
            "max_prompt_tokens": self.max_prompt_tokens, "budget_usd": self.settings.budget_usd,
            "api_base": self.settings.api_base,
            "served_models": sorted({r["model"] for r in raws if r.get("model")}),
            "fingerprints": sorted({r["system_fingerprint"] for r in raws if r.get("system_fingerprint")}),
        })
        return envelope(submission, bundle, rubric, info, criteria, record)

    # -- per criterion -----------------------------------------------------------------------
    def _limiter(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._limiters.get(loop)
        if sem is None:
            sem = self._limiters[loop] = asyncio.Semaphore(self.max_concurrency)
        return sem

    async def _criterion(self, criterion: Criterion, submission: Submission, bundle: EvidenceBundle, rubric: Rubric,
                         ledger: Ledger, counter: Any) -> tuple[CriterionDraft, list[dict[str, Any]], PackedPrompt | None]:
        reason = not_applicable_reason(criterion, submission)
        if reason:
            return not_applicable(criterion, reason), [], None
        basis = [i for i in bundle.items if any(kind_matches(p, i.kind) for p in criterion.basis)]
        if criterion.basis and not basis:
            detail = f"{INSUFFICIENT}: none of {list(criterion.basis)} was produced; no model call made"
            return CriterionDraft(criterion_id=criterion.id, status="unscored", reason=INSUFFICIENT, rationale=detail,
                                  citations=tuple(Citation(evidence_id=f.id) for f in bundle.failures)), [], None
        packed = await asyncio.to_thread(
            pack_criterion, criterion, rubric, submission, bundle,
            max_tokens=self.max_prompt_tokens, counter=counter, templates=self.templates,
        )
        ctx = VerdictContext.build(criterion, bundle, submission.files)
        model_cls = verdict_model(criterion.id, criterion.scores)
        results = await asyncio.gather(*(self._sample(criterion, packed, ctx, model_cls, s, ledger) for s in range(self.samples)))
        draft = reduce_samples(criterion.id, list(results), lambda v: to_citations(v, ctx.locations))
        if draft.status == "scored":
            assert draft.score is not None
            flags = [*draft.flags, *evidence_flags(criterion, bundle, draft.score),
                     *injection_flags(bundle, draft.score, draft.rationale, draft.citations, rubric.scale_min, rubric.scale_max)]
            draft = draft.model_copy(update={"flags": tuple(flags)})
        if packed.omitted_ids:
            note = Flag(code="evidence_truncated",
                        message=f"{len(packed.omitted_ids)} evidence item(s) left out of the prompt for the token budget")
            draft = draft.model_copy(update={"flags": (*draft.flags, note)})
        calls = [c for r in sorted(results, key=lambda r: r.index) for c in r.calls]
        return draft, calls, packed

    async def _sample(self, criterion: Criterion, packed: PackedPrompt, ctx: VerdictContext,
                      model_cls: type[Verdict], index: int, ledger: Ledger) -> SampleResult:
        import instructor  # lazy: only the model path pays for it

        seed = self.seed + index
        params = {"temperature": self.temperature, "seed": seed, "mode": self.mode_name, "reasks": self.policy.reasks,
                  "schema": _schema_hash(model_cls), "api_base": getattr(self.settings, "api_base", None)}
        key = cache_key(model=self.model, messages_hash=packed.messages_hash, params=params, sample=index)
        hit = self.cache.get(key)
        if hit is not None:
            try:
                verdict = model_cls.model_validate(hit["verdict"], context={"verdict": ctx})
            except (ValidationError, KeyError, TypeError):
                hit = None  # stale or damaged entry: draft again
            else:
                ledger.totals["cached_samples"] += 1
                return SampleResult(index, verdict, calls=[{**c, "cached": True} for c in hit.get("calls", [])], cached=True)
        caller = _Caller(self, ledger, self._limiter(), criterion.id, index, len(packed.messages))
        mode = {"tools": instructor.Mode.TOOLS, "json": instructor.Mode.JSON, "md_json": instructor.Mode.MD_JSON}.get(
            self.mode_name, instructor.Mode.TOOLS)
        client = instructor.from_litellm(caller.complete, mode=mode, async_client=True)
        try:
            verdict = await client.chat.completions.create(
                model=self.model, messages=[dict(m) for m in packed.messages], response_model=model_cls,
                max_retries=self.policy.reasks, context={"verdict": ctx},
                temperature=self.temperature, seed=seed,
            )
        except Exception as exc:  # the unit boundary: a failed sample is a value with its reason
            return SampleResult(index, None, reason=_failure_reason(exc, self.policy.reasks), calls=caller.calls)
        result = SampleResult(index, verdict, calls=caller.calls)
        self.cache.put(key, {"verdict": verdict.model_dump(mode="json"), "calls": caller.calls})
        return result
