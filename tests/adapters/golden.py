"""Golden cases: recorded CLI output (``samples/<product>/``) and what it must mean.

Each sample reproduces a shape measured against the real CLI (cli-adapters.md); the
table below is the single place that says which outcome each one documents. The contract
tests run every row; the per-product tests add the details.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from review_loop.adapters import Adapter, get_adapter
from review_loop.agents.models import (
    AgentRequest,
    Capabilities,
    Completed,
    DeliveryState,
    Invocation,
)

SAMPLES = Path(__file__).parent / "samples"
REPO = Path("/work/repo")
PROMPT = "Review the change in src/app.py for thread safety."
RESUME_ID = "0f0e0d0c-0b0a-4908-8706-050403020100"

CLAUDE_SID = "6f1c2b7e-3a4d-4e5f-9a8b-1c2d3e4f5a6b"
CODEX_TID = "01a228a5-31e8-78a0-b0d8-2bbde8cbff29"
GEMINI_SID = "3c9b1f2e-7d4a-4b6c-9e8f-0a1b2c3d4e5f"
GROK_SID = "019f470d-3e02-7601-b726-1133cc72ef76"
SIMULATED_SID = "5d2c1b0a-9e8f-4a7b-8c6d-5e4f3a2b1c0d"
OPENCODE_SID = "ses_dcb89c963ffeNw8iTUmWFHuom1"
OPENCODE_401_SID = "ses_dcb86b925ffeT426tauU2hd4T2"
QWEN_SID = "3f237c64-322c-47a7-a5c4-c92480ae7064"
QWEN_401_SID = "c8528948-47da-4b8f-b394-c7bcb53f7823"
OPENCODE_RESUME_ID = "ses_0000000000000000000000000"

DELIVERED = DeliveryState.DELIVERED
NOT_SUBMITTED = DeliveryState.NOT_SUBMITTED
UNKNOWN = DeliveryState.DELIVERY_UNKNOWN


def sample(product: str, name: str) -> bytes:
    """The bytes of ``samples/<product>/<name>``."""
    return (SAMPLES / product / name).read_bytes()


@dataclass(frozen=True)
class Golden:
    """One recorded run and its documented meaning.

    Attributes:
        stdout / stderr: sample file names (``None``: the stream was empty).
        probe: sample file with the probe's output, for adapters with variants.
        resume: the run resumed this session id.
        state: the documented delivery state; ``DELIVERED`` means a reply.
        text / session_id / reason / session_not_found: what the outcome must carry.
    """

    product: str
    name: str
    state: DeliveryState
    stdout: str | None = None
    stderr: str | None = None
    returncode: int = 0
    probe: str | None = None
    resume: str | None = None
    text: str | None = None
    session_id: str | None = None
    reason: str | None = None
    session_not_found: bool = False

    @property
    def id(self) -> str:
        return f"{self.product}/{self.name}"

    def adapter(self) -> Adapter:
        return get_adapter(self.product)

    def capabilities(self) -> Capabilities:
        adapter = self.adapter()
        probe = sample(self.product, self.probe).decode() if self.probe else None
        return adapter.capabilities(probe)

    def invocation(self) -> Invocation:
        adapter = self.adapter()
        request = AgentRequest(prompt=PROMPT, cwd=REPO, resume_session_id=self.resume)
        return adapter.build(
            request, command=(adapter.default_executable,), capabilities=self.capabilities()
        )

    def completed(self, **changes: object) -> Completed:
        stdout = sample(self.product, self.stdout) if self.stdout else b""
        stderr = sample(self.product, self.stderr) if self.stderr else b""
        return finished(stdout, stderr, **{"returncode": self.returncode, **changes})


VIBE = "help-vibe-0.0.34.txt"
BUILD = "help-build-synthetic.txt"

# fmt: off
# What the simulated reviewer printed for PROMPT, recorded in its sample.
SIMULATED_TEXT = json.loads(sample("simulated", "success.jsonl"))["text"]

CASES: tuple[Golden, ...] = (
    # -- claude -------------------------------------------------------------------------
    Golden("claude", "success", DELIVERED, stdout="success.json",
           text="FAKE-ANSWER #1", session_id=CLAUDE_SID),
    Golden("claude", "success-with-denial", DELIVERED, stdout="success-with-denial.json",
           text="I could not write the file while in plan mode. FAKE-ANSWER #2",
           session_id=CLAUDE_SID),
    Golden("claude", "not-logged-in", NOT_SUBMITTED, stdout="not-logged-in.json",
           returncode=1, reason="not logged in"),
    # a 401 after the model had counted tokens (usage, modelUsage): it had read the prompt
    Golden("claude", "api-401", UNKNOWN, stdout="api-401.json", returncode=1,
           reason="auth_failed", session_id=CLAUDE_SID),
    Golden("claude", "api-500", UNKNOWN, stdout="api-500.json", returncode=1,
           reason="api error 500", session_id=CLAUDE_SID),
    Golden("claude", "connection-refused", UNKNOWN, stdout="connection-refused.json",
           returncode=1, reason="connection failed", session_id=CLAUDE_SID),
    Golden("claude", "session-not-found", NOT_SUBMITTED, stderr="session-not-found.stderr.txt",
           returncode=1, resume=RESUME_ID, reason="session not found", session_not_found=True),
    Golden("claude", "invalid-session-id", NOT_SUBMITTED,
           stderr="invalid-session-id.stderr.txt", returncode=1, reason="argument error"),
    Golden("claude", "session-in-use", NOT_SUBMITTED, stderr="session-in-use.stderr.txt",
           returncode=1, reason="argument error"),
    Golden("claude", "resume-not-a-uuid", NOT_SUBMITTED,
           stderr="resume-not-a-uuid.stderr.txt", returncode=1, resume="my-title",
           reason="argument error"),
    Golden("claude", "unknown-option", NOT_SUBMITTED, stderr="unknown-option.stderr.txt",
           returncode=1, reason="argument error"),
    Golden("claude", "garbage", UNKNOWN, stdout="garbage.txt", reason="parse failed"),
    Golden("claude", "empty", UNKNOWN, reason="empty output"),
    Golden("claude", "empty-non-zero", UNKNOWN, returncode=3, reason="non-zero exit 3"),
    # -- codex --------------------------------------------------------------------------
    Golden("codex", "success", DELIVERED, stdout="success.jsonl",
           text="FAKE-ANSWER #1", session_id=CODEX_TID),
    Golden("codex", "success-after-reconnect", DELIVERED, stdout="success-after-reconnect.jsonl",
           text="FAKE-ANSWER #2", session_id=CODEX_TID),
    # refused before any item: the provider processed nothing
    Golden("codex", "turn-failed-401", NOT_SUBMITTED, stdout="turn-failed-401.jsonl",
           returncode=1, reason="auth_failed", session_id=CODEX_TID),
    Golden("codex", "turn-failed-500", UNKNOWN, stdout="turn-failed-500.jsonl", returncode=1,
           reason="turn failed", session_id=CODEX_TID),
    Golden("codex", "connection-failed", UNKNOWN, stdout="connection-failed.jsonl",
           returncode=1, reason="turn failed", session_id=CODEX_TID),
    Golden("codex", "missing-key-event", NOT_SUBMITTED, stdout="missing-key.jsonl",
           returncode=1, reason="missing credentials"),
    Golden("codex", "missing-key-stderr", NOT_SUBMITTED, stderr="missing-key.stderr.txt",
           returncode=1, reason="missing credentials"),
    Golden("codex", "session-not-found", NOT_SUBMITTED, stderr="session-not-found.stderr.txt",
           returncode=1, resume=RESUME_ID, reason="session not found", session_not_found=True),
    Golden("codex", "unexpected-argument", NOT_SUBMITTED,
           stderr="unexpected-argument.stderr.txt", returncode=2, reason="argument error"),
    Golden("codex", "untrusted-directory", NOT_SUBMITTED,
           stderr="untrusted-directory.stderr.txt", returncode=1, reason="untrusted directory"),
    Golden("codex", "garbage", UNKNOWN, stdout="garbage.txt", reason="parse failed"),
    Golden("codex", "empty", UNKNOWN, reason="empty output"),
    # -- gemini -------------------------------------------------------------------------
    Golden("gemini", "success", DELIVERED, stdout="success.json",
           text="FAKE-ANSWER #1", session_id=GEMINI_SID),
    Golden("gemini", "auth-not-configured", NOT_SUBMITTED,
           stderr="auth-not-configured.stderr.json", returncode=41,
           reason="auth not configured"),
    Golden("gemini", "invalid-auth-method", NOT_SUBMITTED,
           stderr="invalid-auth-method.stderr.json", returncode=41,
           reason="auth not configured"),
    Golden("gemini", "untrusted-directory", NOT_SUBMITTED,
           stderr="untrusted-directory.stderr.txt", returncode=55, reason="untrusted directory"),
    Golden("gemini", "session-not-found", NOT_SUBMITTED, stderr="session-not-found.stderr.txt",
           returncode=42, resume=RESUME_ID, reason="session not found", session_not_found=True),
    Golden("gemini", "unknown-argument", NOT_SUBMITTED, stderr="unknown-argument.stderr.txt",
           returncode=1, reason="argument error"),
    Golden("gemini", "api-401", UNKNOWN, stderr="api-401.stderr.json", returncode=145,
           reason="auth_failed", session_id=GEMINI_SID),
    # 0.61 against a 401: warnings, then a stack dump quoting the body inline, then the
    # pretty-printed error object (measured by tests/e2e/test_consult_real.py).
    Golden("gemini", "api-401-after-stack-trace", UNKNOWN,
           stderr="api-401-after-stack-trace.stderr.txt", returncode=145,
           reason="auth_failed", session_id=GEMINI_SID),
    Golden("gemini", "api-500", UNKNOWN, stderr="api-500.stderr.json", returncode=1,
           reason="api error 500", session_id=GEMINI_SID),
    Golden("gemini", "garbage", UNKNOWN, stdout="garbage.txt", reason="parse failed"),
    Golden("gemini", "empty", UNKNOWN, reason="empty output"),
    # -- grok (Grok Build) --------------------------------------------------------------
    Golden("grok", "build-success", DELIVERED, stdout="build-success.json", probe=BUILD,
           text="FAKE-ANSWER #1", session_id=GROK_SID),
    Golden("grok", "build-garbage-around-json", DELIVERED,
           stdout="build-garbage-around-json.txt", probe=BUILD, text="FAKE-ANSWER #2",
           session_id=GROK_SID),
    Golden("grok", "build-cancelled", UNKNOWN, stdout="build-cancelled.json", probe=BUILD,
           reason="cancelled at a permission gate", session_id=GROK_SID),
    Golden("grok", "build-unknown-option", NOT_SUBMITTED, stderr="unknown-option.stderr.txt",
           returncode=2, probe=BUILD, reason="argument error"),
    Golden("grok", "build-garbage", UNKNOWN, stdout="garbage.txt", probe=BUILD,
           reason="parse failed"),
    Golden("grok", "build-empty", UNKNOWN, probe=BUILD, reason="empty output"),
    # -- grok (npm @vibe-kit/grok-cli 0.0.34) -------------------------------------------
    Golden("grok", "vibe-success", DELIVERED, stdout="vibe-success.jsonl", probe=VIBE,
           text="FAKE-ANSWER #1"),
    Golden("grok", "vibe-api-401", UNKNOWN, stdout="vibe-api-401.jsonl", probe=VIBE,
           reason="auth_failed"),
    Golden("grok", "vibe-api-500", UNKNOWN, stdout="vibe-api-500.jsonl", probe=VIBE,
           reason="api error"),
    Golden("grok", "vibe-connection-error", UNKNOWN, stdout="vibe-connection-error.jsonl",
           probe=VIBE, reason="api error"),
    Golden("grok", "vibe-tool-rounds-exhausted", UNKNOWN,
           stdout="vibe-tool-rounds-exhausted.jsonl", probe=VIBE, reason="no final answer"),
    Golden("grok", "vibe-no-key", NOT_SUBMITTED, stderr="vibe-no-key.stderr.txt",
           returncode=1, probe=VIBE, reason="missing credentials"),
    Golden("grok", "vibe-unknown-option", NOT_SUBMITTED, stderr="unknown-option.stderr.txt",
           returncode=1, probe=VIBE, reason="argument error"),
    Golden("grok", "vibe-garbage", UNKNOWN, stdout="garbage.txt", probe=VIBE,
           reason="parse failed"),
    Golden("grok", "vibe-empty", UNKNOWN, probe=VIBE, reason="empty output"),
    # -- opencode 1.18.33 (recorded against the fake model API) --------------------------
    Golden("opencode", "success", DELIVERED, stdout="success.jsonl",
           text="FAKE-ANSWER #1", session_id=OPENCODE_SID),
    Golden("opencode", "api-401", NOT_SUBMITTED, stdout="api-401.jsonl", returncode=1,
           reason="auth_failed", session_id=OPENCODE_401_SID),
    Golden("opencode", "session-not-found", NOT_SUBMITTED,
           stderr="session-not-found.stderr.txt", returncode=1, resume=OPENCODE_RESUME_ID,
           reason="session not found", session_not_found=True),
    Golden("opencode", "garbage", UNKNOWN, stdout="garbage.txt", reason="parse failed"),
    Golden("opencode", "empty-non-zero", UNKNOWN, returncode=3, reason="non-zero exit 3"),
    # -- qwen 0.24.4 (recorded against the fake model API) ------------------------------
    Golden("qwen", "success", DELIVERED, stdout="success.json",
           text="FAKE-ANSWER #1", session_id=QWEN_SID),
    # An assistant message quoting "[API Error: 401 ...]" comes first: not an answer; it
    # is the only one, and no tool result came back: nothing was processed.
    Golden("qwen", "api-401", NOT_SUBMITTED, stdout="api-401.json", stderr="api-401.stderr.json",
           returncode=1, reason="auth_failed", session_id=QWEN_401_SID),
    Golden("qwen", "session-not-found", NOT_SUBMITTED, stderr="session-not-found.stderr.txt",
           returncode=1, resume=RESUME_ID, reason="session not found", session_not_found=True),
    Golden("qwen", "garbage", UNKNOWN, stdout="garbage.txt", reason="parse failed"),
    Golden("qwen", "empty", UNKNOWN, reason="empty output"),
    # -- refusals: each provider's own refusal of the first request, as each real CLI
    # relayed it (recorded against tests/fakes/refusals.py's bodies; tests/e2e/
    # test_refusals_real.py re-proves them). NOT_SUBMITTED where the run proves the provider
    # processed nothing; gemini's error document and grok 0.0.34's transcript (it drops the
    # tool rounds before an error) cannot prove it.
    *(Golden("claude", f"refused-{kind}", NOT_SUBMITTED, stdout=f"refused-{kind}.json",
             returncode=1, reason=reason)
      for kind, reason in (("rate_limit", "rate_limited"), ("quota", "quota_exhausted"),
                           ("billing", "quota_exhausted"), ("expired", "auth_failed"),
                           ("model", "model_unavailable"))),
    *(Golden("codex", f"refused-{kind}", NOT_SUBMITTED, stdout=f"refused-{kind}.jsonl",
             returncode=1, reason=reason)
      for kind, reason in (("rate_limit", "rate_limited"), ("quota", "quota_exhausted"),
                           ("usage_limit", "quota_exhausted"), ("billing", "quota_exhausted"),
                           ("auth", "auth_failed"), ("model", "model_unavailable"))),
    *(Golden("grok", f"vibe-refused-{kind}", UNKNOWN, probe=VIBE,
             stdout=f"vibe-refused-{kind}.jsonl", reason=reason)
      for kind, reason in (("rate_limit", "rate_limited"), ("quota", "quota_exhausted"),
                           ("auth", "auth_failed"), ("model", "model_unavailable"))),
    # opencode: only the error event, no step begun (a 429 after its own five retries).
    *(Golden("opencode", f"refused-{kind}", NOT_SUBMITTED, stdout=f"refused-{kind}.jsonl",
             returncode=1, reason=reason)
      for kind, reason in (("rate_limit", "rate_limited"), ("quota", "quota_exhausted"),
                           ("model", "model_unavailable"))),
    # qwen: only its quote of the API error (a 429 after its seven tries, maxRetries 0).
    *(Golden("qwen", f"refused-{kind}", NOT_SUBMITTED, stdout=f"refused-{kind}.json",
             returncode=1, reason=reason)
      for kind, reason in (("rate_limit", "rate_limited"), ("quota", "quota_exhausted"),
                           ("model", "model_unavailable"))),
    Golden("gemini", "refused-auth", UNKNOWN, stderr="refused-auth.stderr.txt",
           returncode=144, reason="auth_failed"),
    Golden("gemini", "refused-billing", UNKNOWN, stderr="refused-billing.stderr.txt",
           returncode=146, reason="quota_exhausted"),
    # bounded by gemini_defaults.json (else it retries and falls back without end); named
    # from gemini's own error class: the document says "exceeded your current quota" for a
    # per-minute limit too, and gives a 404 exit code 1.
    Golden("gemini", "refused-rate_limit", UNKNOWN, stderr="refused-rate_limit.stderr.txt",
           returncode=173, reason="rate_limited"),
    Golden("gemini", "refused-quota", UNKNOWN, stderr="refused-quota.stderr.txt",
           returncode=173, reason="quota_exhausted"),
    Golden("gemini", "refused-model", UNKNOWN, stderr="refused-model.stderr.txt",
           returncode=1, reason="model_unavailable"),
    # -- simulated (review-loop's offline stand-in, python -m review_loop.simulated) ----
    Golden("simulated", "success", DELIVERED, stdout="success.jsonl",
           text=SIMULATED_TEXT, session_id=SIMULATED_SID),
)
# fmt: on


def cases_for(product: str) -> tuple[Golden, ...]:
    """The golden rows of one product."""
    return tuple(case for case in CASES if case.product == product)


def success_for(product: str) -> Golden | None:
    """The first golden success of ``product``, if it has one."""
    return next((c for c in cases_for(product) if c.state is DELIVERED), None)


def finished(stdout: bytes = b"", stderr: bytes = b"", **changes: object) -> Completed:
    """A :class:`Completed` for hand-written output (``returncode`` 0 unless changed)."""
    fields: dict[str, object] = {
        "returncode": 0,
        "stdout": stdout,
        "stderr": stderr,
        "stdout_bytes": len(stdout),
        "elapsed_ms": 1500,
    }
    fields.update(changes)
    return Completed(**fields)  # type: ignore[arg-type]


def cut_middle(data: bytes, head: int, tail: int) -> bytes:
    """What a capped reader keeps of ``data``: the first and the last bytes, joined."""
    return data[:head] + data[-tail:]
