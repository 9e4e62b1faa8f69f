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
from grader.drafting.concurrency import AdaptiveLimiter
from grader.drafting.retry import NO_PROVIDER_RETRIES, ErrorKind, RetryPolicy, classify, is_transient
from grader.drafting.rules import INSUFFICIENT
from grader.drafting.sampling import SampleResult, reduce_samples, to_citations
from grader.errors import GraderError, ModelProviderError
from grader.prompting import PackedPrompt, litellm_counter, load_templates, pack_criterion
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


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [""])[0][:300]


def _timed_out(exc: BaseException) -> bool:
    return isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or getattr(exc, "status_code", None) == 408 \
        or isinstance(exc, load_litellm().Timeout)


def _unreachable(exc: BaseException) -> bool:
    """No connection to the server at all (refused, unknown host), as opposed to an answer with an error or a
    timeout. litellm reports a refused connection as a server error, so the chain of causes decides."""
    import socket

    import httpx

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, (httpx.ConnectError, ConnectionRefusedError, socket.gaierror)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _cause(exc: BaseException) -> BaseException:
    """The real error under instructor's and tenacity's wrappers."""
    cause: BaseException = exc
    while cause.__cause__ is not None and type(cause).__name__ in ("InstructorRetryException", "RetryError"):
        cause = cause.__cause__
    return cause


SLOW = "model too slow"


def _failure_reason(exc: BaseException, reasks: int, timeout_s: float = 0.0) -> str:
    """One line: why a sample has no verdict. Walks instructor's wrapper to the real cause."""
    cause = _cause(exc)
    if isinstance(cause, ModelProviderError):
        return cause.message
    if _timed_out(cause):
        return (f"{SLOW}: no reply within the {timeout_s:g} s request timeout after retries ({type(cause).__name__}); "
                "a slow local server needs a longer GRADER_TIMEOUT_S")
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


class DraftGuard:
    """Per draft: whether any model call succeeded, and the error that stopped the draft (if one did)."""

    def __init__(self, api_base: str | None) -> None:
        self.api_base = api_base
        self.succeeded = False
        self.fatal: ModelProviderError | None = None

    def stopped(self) -> bool:
        return self.fatal is not None

    def check(self) -> None:
        if self.fatal is not None:
            raise self.fatal

    async def stop(self, exc: BaseException, limiter: AdaptiveLimiter, *, unreachable: bool = False) -> None:
        if self.fatal is None:
            status = getattr(exc, "status_code", None)
            what = (f"cannot reach the model server{f' at {self.api_base}' if self.api_base else ''}" if unreachable
                    else f"the model provider rejected the request ({type(exc).__name__}{f' {status}' if status else ''})")
            self.fatal = ModelProviderError(f"{what}: {_first_line(exc)}")
        await limiter.wake()


class _Caller:
    """The completion function instructor calls: budget check, adaptive concurrency, retries, record."""

    def __init__(self, drafter: LLMDrafter, ledger: Ledger, limiter: AdaptiveLimiter, guard: DraftGuard,
                 criterion_id: str, sample: int, initial_messages: int) -> None:
        self.drafter = drafter
        self.ledger = ledger
        self.limiter = limiter
        self.guard = guard
        self.criterion_id = criterion_id
        self.sample = sample
        self.initial = initial_messages
        self.calls: list[dict[str, Any]] = []
        self.slot_wait_s = 0.0
        self.unreachable = False  # the last attempt found no server (judged while its exception chain is intact)

    async def complete(self, *args: Any, **kwargs: Any) -> Any:
        policy = self.drafter.policy
        messages = list(kwargs.get("messages") or [])
        kwargs.update(NO_PROVIDER_RETRIES)
        kwargs.setdefault("drop_params", True)  # e.g. `seed` on providers without it: dropped, not an error
        kwargs.update(self.drafter.endpoint)
        feedback = _feedback(messages, self.initial)
        started = time.monotonic()

        def active_s() -> float:  # time spent on this call, not waiting for a client-side slot
            return time.monotonic() - started - self.slot_wait_s

        try:
            async for attempt in policy.transport(active_s):
                with attempt:
                    return await self._attempt(args, kwargs, messages, feedback, policy.deadline_s - active_s())
        except Exception as exc:
            if self.unreachable and not self.guard.succeeded and not self.guard.stopped():
                await self.guard.stop(exc, self.limiter, unreachable=True)  # nothing ever answered: a bad api_base
            raise
        raise AssertionError("unreachable: tenacity reraises")  # pragma: no cover

    async def _attempt(self, args: tuple, kwargs: dict[str, Any], messages: list[Any], feedback: str | None,
                       remaining_s: float) -> Any:
        litellm = load_litellm()
        policy = self.drafter.policy
        self.guard.check()
        self.ledger.check()
        entry: dict[str, Any] = {
            "criterion": self.criterion_id, "sample": self.sample, "call": len(self.calls) + 1,
            "messages_hash": _hash(messages), "reask_feedback": feedback, "cached": False,
        }
        waiting = time.monotonic()
        async with self.limiter.slot(self.guard.stopped) as sharing:
            self.slot_wait_s += time.monotonic() - waiting
            self.guard.check()
            t0 = time.monotonic()
            try:
                resp = await litellm.acompletion(*args, timeout=max(0.05, min(policy.timeout_s, remaining_s)), **kwargs)
            except Exception as exc:
                entry.update(latency_s=round(time.monotonic() - t0, 4), error=_error_record(exc), raw=None)
                self.calls.append(entry)
                self.unreachable = _unreachable(exc)
                self.ledger.failed()
                kind = classify(exc)
                if kind is ErrorKind.overload:
                    self.limiter.overloaded("timeouts" if _timed_out(exc) else "busy")
                elif kind is ErrorKind.fatal:
                    await self.guard.stop(exc, self.limiter)
                raise
            latency = time.monotonic() - t0
            self.limiter.replied(latency, sharing)
        self.guard.succeeded = True
        usage = usage_of(resp)
        cost = call_cost(self.drafter.model, usage, self.drafter.settings)
        self.ledger.add(usage, cost)
        entry.update(latency_s=round(latency, 4), error=None, raw=_raw_reply(resp), usage=usage, cost_usd=cost)
        self.calls.append(entry)
        return resp


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
        self._limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AdaptiveLimiter] = weakref.WeakKeyDictionary()

    # -- public ------------------------------------------------------------------------------
    def draft(self, submission: Submission, bundle: EvidenceBundle, rubric: Rubric) -> Draft:
        return run_sync(self.adraft(submission, bundle, rubric))

    async def adraft(self, submission: Submission, bundle: EvidenceBundle, rubric: Rubric) -> Draft:
        """Concurrent drafting of all criteria; drafts sharing one event loop share the concurrency bound."""
        self._check_credentials()
        ledger = Ledger(self.settings.budget_usd)
        guard = DraftGuard(self.settings.api_base)
        counter = litellm_counter(self.model)
        outcomes = await asyncio.gather(*(self._criterion(c, submission, bundle, rubric, ledger, counter, guard)
                                          for c in rubric.criteria))
        if guard.fatal is not None:  # a rejected key, unknown model or unreachable server: no draft, one clear error
            raise guard.fatal
        criteria = [o[0] for o in outcomes]
        slow = tuple(c.criterion_id for c in criteria if c.status == "unscored" and (c.reason or "").startswith(f"unscored: {SLOW}"))
        calls = [call for o in outcomes for call in o[1]]
        prompt_hashes: dict[str, str] = {}
        for _, _, packed in outcomes:
            if packed is not None:
                prompt_hashes.update(packed.template_hashes)
                prompt_hashes[f"messages:{packed.criterion_id}"] = packed.messages_hash
        usage = {**ledger.totals, **self._limiter().summary()}
        record = DraftRecord(prompt_hashes=prompt_hashes, seed=self.seed, calls=tuple(calls), usage=usage,
                             cost_usd=round(ledger.spent_usd, 8), slow_criteria=slow)
        raws = [c["raw"] for c in calls if c.get("raw")]
        info = DrafterInfo(name=self.name, version=self.version, model=self.model, params={
            "samples": self.samples, "temperature": self.temperature, "seed": self.seed, "mode": self.mode_name,
            "max_reasks": self.policy.reasks, "transport_attempts": self.policy.transport_attempts,
            "timeout_s": self.policy.timeout_s, "deadline_s": self.policy.deadline_s,
            "max_prompt_tokens": self.max_prompt_tokens, "budget_usd": self.settings.budget_usd,
            "max_concurrency": self.max_concurrency,
            "api_base": self.settings.api_base,
            "served_models": sorted({r["model"] for r in raws if r.get("model")}),
            "fingerprints": sorted({r["system_fingerprint"] for r in raws if r.get("system_fingerprint")}),
        })
        return envelope(submission, bundle, rubric, info, criteria, record)

    def _check_credentials(self) -> None:
        """A missing API key fails before any call (the SDK would raise it per call, as a server error)."""
        found = load_litellm().validate_environment(model=self.model, api_key=self.settings.api_key,
                                                    api_base=self.settings.api_base)
        missing = found.get("missing_keys") or []
        if missing:
            raise ModelProviderError(f"model {self.model!r} needs {', '.join(missing)} in the environment (or "
                                     "GRADER_API_KEY); a local server accepts any value")

    # -- per criterion -----------------------------------------------------------------------
    def _limiter(self) -> AdaptiveLimiter:
        """One limiter per event loop: drafts on the same loop share what was learnt about the server."""
        loop = asyncio.get_running_loop()
        limiter = self._limiters.get(loop)
        if limiter is None:
            limiter = self._limiters[loop] = AdaptiveLimiter(self.max_concurrency,
                                                             queue_delay_s=self.settings.llm_queue_delay_s)
        return limiter

    async def _criterion(self, criterion: Criterion, submission: Submission, bundle: EvidenceBundle, rubric: Rubric,
                         ledger: Ledger, counter: Any, guard: DraftGuard,
                         ) -> tuple[CriterionDraft, list[dict[str, Any]], PackedPrompt | None]:
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
        results = await asyncio.gather(*(self._sample(criterion, packed, ctx, model_cls, s, ledger, guard)
                                         for s in range(self.samples)))
        draft = reduce_samples(criterion.id, list(results), lambda v: to_citations(v, ctx.locations))
        if draft.status == "scored":
            assert draft.score is not None
            flags = [*draft.flags, *evidence_flags(criterion, bundle, draft.score),
                     *injection_flags(bundle, draft.score, draft.rationale, draft.citations, rubric.scale_min, rubric.scale_max)]
            draft = draft.model_copy(update={"flags": tuple(flags)})
        if draft.status == "unscored" and (draft.reason or "").startswith(f"unscored: {SLOW}"):
            note = Flag(code="model_too_slow", message=f"{draft.reason}; the client was down to "
                                                        f"{self._limiter().limit} request(s) in flight")
            draft = draft.model_copy(update={"flags": (*draft.flags, note)})
        if packed.omitted_ids:
            note = Flag(code="evidence_truncated",
                        message=f"{len(packed.omitted_ids)} evidence item(s) left out of the prompt for the token budget")
            draft = draft.model_copy(update={"flags": (*draft.flags, note)})
        calls = [c for r in sorted(results, key=lambda r: r.index) for c in r.calls]
        return draft, calls, packed

    async def _sample(self, criterion: Criterion, packed: PackedPrompt, ctx: VerdictContext,
                      model_cls: type[Verdict], index: int, ledger: Ledger, guard: DraftGuard) -> SampleResult:
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
        caller = _Caller(self, ledger, self._limiter(), guard, criterion.id, index, len(packed.messages))
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
            return SampleResult(index, None, reason=_failure_reason(exc, self.policy.reasks, self.policy.timeout_s),
                                calls=caller.calls)
        result = SampleResult(index, verdict, calls=caller.calls)
        self.cache.put(key, {"verdict": verdict.model_dump(mode="json"), "calls": caller.calls})
        return result
