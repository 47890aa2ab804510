"""The spx ``verification run`` surface: every option form, locator and payload edge case.

The scenarios of :mod:`tests.differential.spx_scenarios` follow the paths a skill takes; these
run the rest of what spx's parser (commander) and its journal accept or refuse: ``--opt=value``
forms, repeated options (the last wins), options in any order, values in other cases, the run
locator written in unusual forms (tokens, scopes, file paths relative to ``-C``), unusual
payloads and idempotency keys, and every ``finish`` form. They are played by the same
:func:`tests.differential.spx_scenarios.play` and recorded into
``golden/spx_surface/<scenario>.json`` by
``python -m tests.differential.record_surface --spx <spx/bin/spx.js>``.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.differential.spx_scenarios import BOGUS_TOKEN, Session, _token
from tests.orchestrator.journal.payloads import finding, gap, unit
from tests.test_cli_verification import locator, write

RUN = ("verification", "run")


def _head(s: Session, directory: str | None = None) -> list[str]:
    return ["-C", directory or str(s.repo.root), *RUN]


def option_forms(s: Session) -> None:
    """``--opt=value``, repeated options, reordered options, ``--`` and unknown options."""
    token = s.start()
    head = _head(s)
    where = locator(s.repo, token)
    equals = [f"{where[i]}={where[i + 1]}" for i in range(0, len(where), 2)]
    s.step("status_equals_forms", *head, "status", *equals)
    s.step("status_reversed_order", *head, "status", *where[6:], *where[4:6], *where[:4])
    s.step("status_run_repeated_last_wins", *head, "status", *where, "--run", BOGUS_TOKEN)
    s.step(
        "status_bogus_then_real_run",
        *head,
        "status",
        *where[:6],
        "--run",
        BOGUS_TOKEN,
        "--run",
        token,
    )
    s.step("status_type_repeated", *head, "status", *where, "--verification-type", "test")
    s.step("status_scope_type_repeated", *head, "status", *where, "--scope-type", "file")
    s.step("status_unknown_option_case", *head, "status", *where, "--Run", token, usage=True)
    s.step("status_abbreviated_option", *head, "status", "--verif", "audit", *where[2:], usage=True)
    s.step("status_extra_positional", *head, "status", *where, "extra", usage=True)
    s.step("status_missing_value", *head, "status", *where[:-1], usage=True)
    s.step("status_after_double_dash", *head, "status", "--", *where, usage=True)
    path = write(s.work / "forms-unit.json", unit("keep.py"))
    s.step(
        "scope_add_equals_forms",
        *head,
        *("scope", "add"),
        *equals,
        "--idempotency-key=k1",
        f"--payload={path}",
    )
    s.step(
        "scope_add_options_first",
        *head,
        *("scope", "add", "--idempotency-key", "k1", "--payload", path),
        *where,
    )
    s.step(
        "scope_add_key_repeated",
        *head,
        *("scope", "add", *where, "--idempotency-key", "k0", "--idempotency-key", "k1"),
        *("--payload", path),
    )
    s.step("finish_equals_form", *head, "finish", *equals, "--terminal-status=approved")
    s.step("render_equals_form", *head, "render", *equals)
    s.step("input_equals_form", *head, "input", *equals)


def value_cases(s: Session) -> None:
    """Option values in another case, with spaces, or empty."""
    token = s.start()
    head = _head(s)
    where = locator(s.repo, token)
    s.step("type_upper", *head, "status", "--verification-type", "AUDIT", *where[2:])
    s.step("scope_type_upper", *head, "status", *where[:2], "--scope-type", "CHANGESET", *where[4:])
    s.step("type_padded", *head, "status", "--verification-type", " audit", *where[2:])
    s.step("type_empty", *head, "status", "--verification-type", "", *where[2:])
    s.step("scope_padded", *head, "status", *where[:4], "--scope", f" {s.repo.scope} ", *where[6:])
    s.step("scope_empty", *head, "status", *where[:4], "--scope", "", *where[6:])
    s.step("run_padded", *head, "status", *where[:6], "--run", f" {token}")
    s.step("run_empty", *head, "status", *where[:6], "--run", "")
    s.placeholders[token.upper()] = "<upper-token>"
    s.step("run_upper", *head, "status", *where[:6], "--run", token.upper())
    s.step("finish_status_upper", *head, "finish", *where, "--terminal-status", "APPROVED")
    s.step("finish_status_empty", *head, "finish", *where, "--terminal-status", "")
    s.step(
        "input_source_upper",
        *head,
        "start",
        "--verification-type",
        "audit",
        "--scope-type",
        "changeset",
        "--scope",
        s.repo.scope,
        "--input",
        "STDIN",
        stdin="{}",
    )


def changeset_locators(s: Session) -> None:
    """A changeset scope written in the forms a client may hold."""
    head = _head(s)
    source = write(s.work / "cs.json", {"changed_paths": ["keep.py"]})
    start = [*head, "start", "--verification-type", "audit", "--scope-type", "changeset"]
    base, tip = s.repo.base, s.repo.head
    s.placeholders.update({base.upper(): "<SHA>", tip.upper(): "<SHA>"})
    for name, scope in (
        ("empty_head", f"{base}.."),
        ("empty_base", f"..{tip}"),
        ("same_commit", f"{tip}..{tip}"),
        ("reversed", f"{tip}..{base}"),
        ("branch_name", "main~1..main"),
        ("one_commit", tip),
        ("four_dots", f"{base}....{tip}"),
        ("spaces_around_dots", f"{base} .. {tip}"),
        ("upper_hex", f"{base.upper()}..{tip.upper()}"),
    ):
        started = s.step(
            f"start_{name}", *start, "--scope", scope, "--input", source, headline=True
        )
        if started.exit == 0:
            s.step(
                f"status_{name}",
                *head,
                "status",
                "--verification-type",
                "audit",
                "--scope-type",
                "changeset",
                "--scope",
                scope,
                "--run",
                _token(started),
            )
    token = s.start()
    short = f"{base[:7]}..{tip[:7]}"
    s.placeholders[short] = "<short7>..<short7>"
    s.step("status_by_short_ids", *head, "status", *locator(s.repo, token, short))
    s.step("status_by_refs", *head, "status", *locator(s.repo, token, "main~1..main"))


def file_locators(s: Session) -> None:
    """A file scope written in other forms, and relative to ``-C <subdirectory>``."""
    root = str(s.repo.root)
    sub = str(s.repo.root / "src")
    source = write(s.work / "f.json", {"changed_paths": ["src/a.py"]})
    start = ["start", "--verification-type", "audit", "--scope-type", "file"]
    for name, directory, scope in (
        ("canonical", root, "src/a.py"),
        ("dot_inside", root, "src/./a.py"),
        ("double_slash", root, "src//a.py"),
        ("trailing_slash", root, "src/a.py/"),
        ("through_parent", root, "src/../src/a.py"),
        ("directory", root, "src"),
        ("upper_case", root, "SRC/A.PY"),
        ("with_space", root, "src/a .py"),
        ("relative_to_C", sub, "a.py"),
        ("dot_relative_to_C", sub, "./a.py"),
        ("parent_relative_to_C", sub, "../keep.py"),
        ("root_relative_under_C", sub, "src/a.py"),
    ):
        started = s.step(
            f"start_{name}",
            "-C",
            directory,
            *RUN,
            *start,
            "--scope",
            scope,
            "--input",
            source,
            headline=True,
        )
        if started.exit != 0:
            continue
        token = _token(started)
        where = ["--verification-type", "audit", "--scope-type", "file", "--run", token]
        s.step(f"status_{name}", "-C", directory, *RUN, "status", *where, "--scope", scope)
        s.step(
            f"status_{name}_canonical", "-C", root, *RUN, "status", *where, "--scope", "src/a.py"
        )


def payload_forms(s: Session) -> None:
    """Payloads that are not the plain object: every JSON kind, encodings, sources."""
    token = s.start()
    keep = unit("keep.py")
    for name, text in (
        ("empty_file", ""),
        ("whitespace_only", "  \n"),
        ("null", "null"),
        ("string", '"text"'),
        ("number", "42"),
        ("boolean", "true"),
        ("empty_object", "{}"),
        ("byte_order_mark", "\ufeff" + json.dumps(keep)),
        ("trailing_garbage", json.dumps(keep) + " x"),
        ("two_documents", json.dumps(keep) + "\n" + json.dumps(keep)),
        ("duplicate_keys", json.dumps(keep)[:-1] + ', "coverageStatus": "maybe"}'),
        ("crlf", json.dumps(keep, indent=2).replace("\n", "\r\n")),
        ("trailing_newlines", json.dumps(keep) + "\n\n"),
    ):
        s.add(f"payload_{name}", token, "scope", f"k-{name}", text)
    head = _head(s)
    where = locator(s.repo, token)
    for name, source in (
        ("missing_file", str(s.work / "absent.json")),
        ("directory", str(s.work)),
        ("stdin_upper", "STDIN"),
    ):
        s.step(
            f"payload_{name}",
            *head,
            "scope",
            "add",
            *where,
            "--idempotency-key",
            name,
            "--payload",
            source,
            headline=True,
        )
    s.step(
        "payload_stdin_empty",
        *head,
        "scope",
        "add",
        *where,
        "--idempotency-key",
        "stdin-empty",
        "--payload",
        "stdin",
        stdin="",
    )
    s.step(
        "payload_stdin_array",
        *head,
        "scope",
        "add",
        *where,
        "--idempotency-key",
        "stdin-array",
        "--payload",
        "stdin",
        stdin="[]",
    )
    s.step("status_after_payloads", *head, "status", *where)


def payload_fields(s: Session) -> None:
    """Field values at the edges: types, cases, unicode, nulls, nested extras."""
    token = s.start()
    keep = unit("keep.py")
    for name, payload in (
        ("status_upper", {**keep, "coverageStatus": "AUDITED"}),
        ("status_null", {**keep, "coverageStatus": None}),
        ("status_number", {**keep, "coverageStatus": 1}),
        ("unit_id_empty", {**keep, "unitId": ""}),
        ("unit_id_number", {**keep, "unitId": 7}),
        ("subject_unicode", unit("src/ä ü.py")),
        ("subject_absolute", unit("/etc/passwd")),
        ("subject_dotdot", unit("../escape.py")),
        ("prior_context_extra", {**keep, "priorContext": {**keep["priorContext"], "x": 1}}),
        ("producer_missing_field", {**keep, "expectedProducer": {"producerKind": "skill"}}),
        (
            "provenance_numbers",
            {
                **keep,
                "producerProvenance": {
                    "agentOwningPluginVersion": 1,
                    "skillOwningPluginVersion": 2,
                },
            },
        ),
        ("parent_null", {**keep, "parentUnitId": None}),
        ("nested_array_extra", {**keep, "extra": [[1, {"a": None}]]}),
    ):
        s.add(f"scope_{name}", token, "scope", f"s-{name}", payload)
    s.add("scope_recorded", token, "scope", "s-ok", keep)
    for name, payload in (
        ("severity_upper", finding(keep, severity="BLOCKING")),
        ("severity_advisory", finding(keep, severity="advisory")),
        ("rule_empty", finding(keep, rule="")),
        ("rule_unicode", finding(keep, rule="命名:规则")),
        ("message_empty", {**finding(keep), "message": ""}),
        ("location_missing", {k: v for k, v in finding(keep).items() if k != "location"}),
        ("unit_of_a_gap", finding(gap("src/a.py"))),
        ("evidence_string", {**finding(keep), "evidence": "see line 3"}),
    ):
        s.add(f"finding_{name}", token, "finding", f"f-{name}", payload)
    s.step("render_after_fields", *_head(s), "render", *locator(s.repo, token))


def idempotency_keys(s: Session) -> None:
    """Idempotency keys of every shape, and repeats across verbs and payloads."""
    token = s.start()
    keep = unit("keep.py")
    for name, key in (
        ("empty", ""),
        ("spaces", "  a key  "),
        ("unicode", "ключ-🔑"),
        ("slash", "a/b/../c"),
        ("long", "k" * 300),
        ("dash_leading", "-k"),
        ("newline", "a\nb"),
    ):
        s.add(f"key_{name}", token, "scope", key, {**keep, "subject": "keep.py"})
    s.add("key_reused_other_payload", token, "scope", "  a key  ", unit("new.py"))
    s.add("key_reused_as_finding", token, "finding", "ключ-🔑", finding(keep))
    s.add("key_reused_as_finding_again", token, "finding", "ключ-🔑", finding(keep, rule="x"))
    s.step("status_after_keys", *_head(s), "status", *locator(s.repo, token))


def finish_forms(s: Session) -> None:
    """``finish`` and its metadata across run types, statuses and sources."""
    head = _head(s)
    audit = s.start()
    where = locator(s.repo, audit)
    s.step("audit_finish_no_scope", *head, "finish", *where, "--terminal-status", "approved")
    s.step("audit_finish_same_again", *head, "finish", *where, "--terminal-status", "approved")
    s.step("audit_status_sealed", *head, "status", *where)
    s.add("audit_scope_after_seal", audit, "scope", "late", unit("keep.py"))
    audit2 = s.start()
    where2 = locator(s.repo, audit2)
    for name, status in (("passed", "passed"), ("failed", "failed"), ("unknown", "done")):
        s.step(f"audit_finish_{name}", *head, "finish", *where2, "--terminal-status", status)
    for name, text in (("empty", ""), ("array", "[]"), ("not_json", "{"), ("null", "null")):
        meta = write(s.work / f"meta-{name}.json", text)
        s.step(
            f"audit_finish_metadata_{name}",
            *head,
            "finish",
            *where2,
            "--terminal-status",
            "rejected",
            "--terminal-metadata",
            meta,
        )
    s.step(
        "audit_finish_metadata_missing",
        *head,
        "finish",
        *where2,
        "--terminal-status",
        "rejected",
        "--terminal-metadata",
        str(s.work / "nope.json"),
        headline=True,
    )
    s.step(
        "audit_finish_metadata_stdin_empty",
        *head,
        "finish",
        *where2,
        "--terminal-status",
        "rejected",
        "--terminal-metadata",
        "stdin",
        stdin="",
    )
    test = s.start("test")
    twhere = ["--verification-type", "test", *locator(s.repo, test)[2:]]
    for name, status in (
        ("approved", "approved"),
        ("rejected", "rejected"),
        ("upper", "PASSED"),
        ("passed", "passed"),
        ("failed_after_passed", "failed"),
    ):
        s.step(f"test_finish_{name}", *head, "finish", *twhere, "--terminal-status", status)
    s.step("test_render", *head, "render", *twhere)
    review = s.start("review")
    rwhere = ["--verification-type", "review", *locator(s.repo, review)[2:]]
    s.step(
        "review_finish_without_metadata", *head, "finish", *rwhere, "--terminal-status", "approved"
    )
    submitted = {"actor": "me", "body": "", "submittedAt": "2026-01-01T00:00:00Z"}
    for name, extra in (
        ("commented", {"state": "commented", "commit": s.repo.head}),
        ("state_upper", {"state": "APPROVED", "commit": s.repo.head}),
        ("commit_short", {"state": "approved", "commit": s.repo.head[:7]}),
        ("commit_other", {"state": "approved", "commit": s.repo.base}),
        (
            "submitted_not_a_time",
            {"state": "approved", "commit": s.repo.head, "submittedAt": "yesterday"},
        ),
        ("actor_empty", {"state": "approved", "commit": s.repo.head, "actor": ""}),
        ("dismissed", {"state": "dismissed", "commit": s.repo.head}),
    ):
        meta = write(s.work / f"review-{name}.json", {**submitted, **extra})
        s.step(
            f"review_finish_{name}",
            *head,
            "finish",
            *rwhere,
            "--terminal-status",
            "approved",
            "--terminal-metadata",
            meta,
        )


def verbs_and_types(s: Session) -> None:
    """Every verb on every run type before anything is recorded, and unknown verbs."""
    head = _head(s)
    for kind in ("audit", "review", "test"):
        token = s.start(kind)
        where = ["--verification-type", kind, *locator(s.repo, token)[2:]]
        for verb in ("input", "status", "render"):
            s.step(f"{kind}_{verb}_fresh", *head, verb, *where)
        s.step(
            f"{kind}_scope_add_empty_object",
            *head,
            "scope",
            "add",
            *where,
            "--idempotency-key",
            "e",
            "--payload",
            write(s.work / f"{kind}-e.json", {}),
        )
    token = s.start()
    where = locator(s.repo, token)
    for verb in ("scope", "finding"):
        s.step(f"{verb}_without_add", *head, verb, *where, usage=True)
        s.step(f"{verb}_list", *head, verb, "list", *where, usage=True)
    s.step(
        "start_unknown_type",
        *head,
        "start",
        "--verification-type",
        "lint",
        "--scope-type",
        "changeset",
        "--scope",
        s.repo.scope,
        "--input",
        "stdin",
        stdin="{}",
    )
    s.step(
        "start_twice_same_input",
        *head,
        "start",
        "--verification-type",
        "audit",
        "--scope-type",
        "changeset",
        "--scope",
        s.repo.scope,
        "--input",
        "stdin",
        stdin=json.dumps({"changed_paths": ["keep.py", "new.py"]}),
    )
    s.step("run_without_verb", *head, usage=True)
    s.step("verification_without_run", "-C", str(s.repo.root), "verification", usage=True)


def input_forms(s: Session) -> None:
    """What ``start --input`` takes: every JSON kind, encodings, and the input's fields."""
    head = _head(s)
    start = [
        *head,
        "start",
        "--verification-type",
        "audit",
        "--scope-type",
        "changeset",
        "--scope",
        s.repo.scope,
    ]
    for name, text in (
        ("object_empty", "{}"),
        ("array", "[]"),
        ("null", "null"),
        ("number", "3"),
        ("byte_order_mark", "\ufeff{}"),
        ("paths_not_listed", json.dumps({"changed_paths": ["elsewhere.py"]})),
        ("other_fields", json.dumps({"anything": {"nested": [1, 2]}})),
        ("unicode", json.dumps({"note": "ü 命名"}, ensure_ascii=False)),
    ):
        started = s.step(f"start_input_{name}", *start, "--input", "stdin", stdin=text)
        if started.exit == 0:
            s.step(f"input_{name}", *head, "input", *locator(s.repo, _token(started)))
    file_source = write(s.work / "in-file.json", {"changed_paths": ["keep.py"]})
    started = s.step("start_input_file_equals", *start, f"--input={file_source}")
    if started.exit == 0:
        s.step("input_file_equals", *head, "input", *locator(s.repo, _token(started)))
    s.step("start_input_directory", *start, "--input", str(s.work), headline=True)


SCENARIOS: dict[str, Callable[[Session], None]] = {
    "option_forms": option_forms,
    "value_cases": value_cases,
    "changeset_locators": changeset_locators,
    "file_locators": file_locators,
    "payload_forms": payload_forms,
    "payload_fields": payload_fields,
    "idempotency_keys": idempotency_keys,
    "finish_forms": finish_forms,
    "verbs_and_types": verbs_and_types,
    "input_forms": input_forms,
}
