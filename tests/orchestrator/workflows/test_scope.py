"""Contract and collaboration tests: scope resolution, the artifact registry, reconciliation.

Contract tests of the pure rules (``review_loop.agents.scope_rules``) and collaboration
tests of the resolver against real git repositories with an ``origin`` remote.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from review_loop.agents.scope_rules import (
    RegistryError,
    check_registry,
    glob_regex,
    merge_registries,
    reconcile,
    select_artifacts,
)
from review_loop.orchestrator.workflows import scope


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


class Remote:
    """A bare ``origin`` with ``main``, a clone on a feature branch, and a second clone."""

    def __init__(self, root: Path) -> None:
        self.origin = root / "origin.git"
        self.work = root / "work"
        self.other = root / "other"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.origin)], check=True)
        subprocess.run(
            ["git", "clone", "-q", str(self.origin), str(self.work)],
            check=True,
            capture_output=True,
        )
        for repo in (self.work,):
            git(repo, "config", "user.email", "t@example.com")
            git(repo, "config", "user.name", "t")
        git(self.work, "checkout", "-q", "-b", "main")
        self.base = commit(self.work, {"a.py": "a\n", "docs/guide.txt": "g\n"}, "base")
        git(self.work, "push", "-q", "origin", "main")
        git(self.work, "remote", "set-head", "origin", "main")
        git(self.work, "checkout", "-q", "-b", "feature")
        self.head = commit(
            self.work,
            {"a.py": "a2\n", "tests/test_a.py": "t\n", "web/app.ts": "x\n", "notes.txt": "n\n"},
            "feature",
        )

    def advance_main(self) -> str:
        subprocess.run(
            ["git", "clone", "-q", str(self.origin), str(self.other)],
            check=True,
            capture_output=True,
        )
        git(self.other, "config", "user.email", "t@example.com")
        git(self.other, "config", "user.name", "t")
        tip = commit(self.other, {"z.py": "z\n"}, "advance")
        git(self.other, "push", "-q", "origin", "main")
        return tip


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    return Remote(tmp_path)


REGISTRY = {
    "kinds": [
        {
            "name": "python",
            "artifacts": [
                {
                    "role": "implementation",
                    "plugin": "python",
                    "audit": "code",
                    "detection": {"extensions": ["py"]},
                },
                {
                    "role": "tests",
                    "plugin": "python",
                    "audit": "tests",
                    "detection": {"extensions": ["py"], "path_globs": ["**/tests/**"]},
                },
                {"role": "architecture", "plugin": "python", "audit": "arch"},
            ],
        },
        {
            "name": "docs",
            "artifacts": [
                {
                    "role": "guide",
                    "plugin": "docs",
                    "audit": "audit-guide",
                    "contract": "artifact-type",
                    "detection": {"filenames": ["README"], "extensions": ["md"]},
                }
            ],
        },
    ]
}


def kinds() -> list[dict[str, Any]]:
    return merge_registries([check_registry(REGISTRY, "test")])


# --- the registry ---------------------------------------------------------------------------


def test_most_specific_match_wins_and_detection_less_artifacts_follow() -> None:
    selection = select_artifacts("pkg/tests/test_x.py", kinds())
    assert [(a["role"], a["audit"]) for a in selection] == [
        ("tests", "tests"),
        ("architecture", "arch"),
    ]
    plain = select_artifacts("pkg/x.py", kinds())
    assert [a["role"] for a in plain] == ["implementation", "architecture"]
    assert all(a["kind"] == "python" and a["contract"] == "concern" for a in plain)


def test_filenames_select_and_unregistered_paths_select_nothing() -> None:
    assert [a["audit"] for a in select_artifacts("README", kinds())] == ["audit-guide"]
    assert select_artifacts("image.png", kinds()) == []
    assert select_artifacts(".py", kinds()) == []  # a hidden file has no suffix


def test_extensions_may_be_written_with_a_dot() -> None:
    registry = {
        "kinds": [
            {
                "name": "k",
                "artifacts": [
                    {"role": "r", "plugin": "p", "audit": "a", "detection": {"extensions": [".rs"]}}
                ],
            }
        ]
    }
    assert select_artifacts("src/main.rs", merge_registries([check_registry(registry, "x")]))


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/tests/**", "tests/a.py", True),
        ("**/tests/**", "a/b/tests/c/d.py", True),
        ("**/tests/**", "atests/b.py", False),
        ("**/test_*.py", "test_a.py", True),
        ("**/test_*.py", "x/test_a.py", True),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/b/a.py", False),
        ("spx/**", "spx/a/b.md", True),
        ("a?c", "abc", True),
        ("[!x]yz", "ayz", True),
        ("[!x]yz", "xyz", False),
    ],
)
def test_globs_match_the_whole_path(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


def test_extension_files_append_or_replace_kinds() -> None:
    extension = {
        "kinds": [
            {
                "name": "python",
                "artifacts": [
                    {
                        "role": "docs",
                        "plugin": "python",
                        "audit": "doc",
                        "detection": {"extensions": ["rst"]},
                    }
                ],
            },
            {
                "name": "rust",
                "artifacts": [
                    {
                        "role": "implementation",
                        "plugin": "rust",
                        "audit": "rs",
                        "detection": {"extensions": ["rs"]},
                    }
                ],
            },
        ]
    }
    merged = merge_registries([check_registry(REGISTRY, "a"), check_registry(extension, "b")])
    assert [k["name"] for k in merged] == ["python", "docs", "rust"]
    assert [a["audit"] for a in select_artifacts("x.rst", merged)] == ["doc", "arch"]
    replacing = {"kinds": [{"name": "python", "replace": True, "artifacts": []}]}
    merged = merge_registries([check_registry(REGISTRY, "a"), check_registry(replacing, "c")])
    assert select_artifacts("x.py", merged) == []


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "'kinds' list"),
        ({"kinds": [{"artifacts": []}]}, "kinds[0].name"),
        (
            {"kinds": [{"name": "k", "artifacts": [{"role": "r", "plugin": "p"}]}]},
            "artifacts[0].audit",
        ),
        (
            {
                "kinds": [
                    {
                        "name": "k",
                        "artifacts": [{"role": "r", "plugin": "p", "audit": "a", "contract": "x"}],
                    }
                ]
            },
            "contract",
        ),
        (
            {
                "kinds": [
                    {
                        "name": "k",
                        "artifacts": [{"role": "r", "plugin": "p", "audit": "a", "detection": {}}],
                    }
                ]
            },
            "extensions or filenames",
        ),
        (
            {
                "kinds": [
                    {
                        "name": "k",
                        "artifacts": [
                            {
                                "role": "r",
                                "plugin": "p",
                                "audit": "a",
                                "detection": {"extensions": "py"},
                            }
                        ],
                    }
                ]
            },
            "list of non-empty strings",
        ),
    ],
)
def test_malformed_registries_name_the_field(document: Any, message: str) -> None:
    with pytest.raises(RegistryError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_registry(document, "file.json")


def test_builtin_registry_is_valid_data() -> None:
    loaded = scope.load_registry(Path("/nonexistent"), env={})
    names = [kind["name"] for kind in loaded]
    assert "python" in names and "typescript" in names
    assert select_artifacts("tests/test_a.py", loaded)[0]["role"] == "tests"


def test_user_and_environment_registries_extend_the_builtin(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "artifact-registry.json").write_text(
        json.dumps(
            {
                "kinds": [
                    {
                        "name": "go",
                        "artifacts": [
                            {
                                "role": "implementation",
                                "plugin": "go",
                                "audit": "audit-go-code",
                                "detection": {"extensions": ["go"]},
                            }
                        ],
                    }
                ]
            }
        )
    )
    repo = tmp_path / "repo"  # the repository's own layer: tests/test_repo_config_audit.py
    extension = tmp_path / "extension.json"
    extension.write_text(
        json.dumps(
            {
                "kinds": [
                    {
                        "name": "go",
                        "artifacts": [
                            {
                                "role": "architecture",
                                "plugin": "go",
                                "audit": "audit-go-architecture",
                            }
                        ],
                    }
                ]
            }
        )
    )
    loaded = scope.load_registry(
        repo, env={"REVIEW_LOOP_HOME": str(home), "REVIEW_LOOP_ARTIFACT_REGISTRY": str(extension)}
    )
    assert [a["audit"] for a in select_artifacts("main.go", loaded)] == [
        "audit-go-code",
        "audit-go-architecture",
    ]
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(scope.ScopeResolutionError, match=r"broken\.json"):
        scope.load_registry(repo, env={"REVIEW_LOOP_ARTIFACT_REGISTRY": str(broken)})


# --- the verdict ----------------------------------------------------------------------------


def unit(subject: str, status: str = "audited", requirement: str = "required") -> dict[str, str]:
    return {
        "unitId": f"u:{subject}",
        "subject": subject,
        "coverageStatus": status,
        "coverageRequirement": requirement,
    }


def test_reconciled_when_recorded_subjects_equal_the_inventory() -> None:
    verdict = reconcile(["a", "b"], ["a", "b"], [unit("a"), unit("b", "skipped", "optional")])
    assert verdict == {
        "expected": 2,
        "recorded": 2,
        "unaccounted": [],
        "unexpected": [],
        "drifted": [],
        "nonfinal": [],
        "reconciled": True,
    }


def test_unaccounted_keeps_inventory_order() -> None:
    verdict = reconcile(["c", "a", "b"], ["c", "a", "b"], [unit("a")])
    assert verdict["unaccounted"] == ["c", "b"] and not verdict["reconciled"]


def test_unexpected_subjects() -> None:
    verdict = reconcile(["a"], ["a"], [unit("a"), unit("z")])
    assert verdict["unexpected"] == ["z"] and not verdict["reconciled"]


def test_drift_in_both_directions() -> None:
    verdict = reconcile(["a", "b"], ["b", "c"], [unit("a"), unit("b")])
    assert verdict["drifted"] == ["a", "c"] and not verdict["reconciled"]


def test_nonfinal_required_units_but_not_optional_ones() -> None:
    units = [unit("a", "incomplete"), unit("b", "skipped", "optional"), unit("c", "skipped")]
    verdict = reconcile(["a", "b", "c"], ["a", "b", "c"], units)
    assert verdict["nonfinal"] == ["u:a", "u:c"]


def test_missing_skill_units_are_not_subjects() -> None:
    units = [unit("a"), unit("python:audit-python-tests", "missing-skill")]
    verdict = reconcile(["a"], ["a"], units)
    assert verdict["unexpected"] == [] and verdict["recorded"] == 1 and verdict["reconciled"]


def test_live_paths_are_expected_but_never_drift() -> None:
    verdict = reconcile(["a"], ["a"], [unit("a"), unit("live.ts")], live_paths=["live.ts"])
    assert verdict["expected"] == 2 and verdict["reconciled"]
    missing = reconcile(["a"], ["a"], [unit("a")], live_paths=["live.ts"])
    assert missing["unaccounted"] == ["live.ts"] and missing["drifted"] == []


# --- resolving against git ------------------------------------------------------------------


def test_head_resolves_against_the_fetched_origin_default(remote: Remote) -> None:
    resolved = scope.resolve_committed_scope(remote.work, "HEAD")
    assert resolved == {
        "base": remote.base,
        "head": remote.head,
        "changed_paths": ["a.py", "notes.txt", "tests/test_a.py", "web/app.ts"],
    }
    assert scope.resolve_committed_scope(remote.work, "feature")["head"] == remote.head


def test_three_dot_selector(remote: Remote) -> None:
    resolved = scope.resolve_committed_scope(remote.work, f"{remote.base}...{remote.head}")
    assert resolved["base"] == remote.base and resolved["head"] == remote.head


def test_stale_base_is_refused_with_its_diagnostic(remote: Remote) -> None:
    tip = remote.advance_main()
    with pytest.raises(scope.StaleBaseError) as caught:
        scope.resolve_committed_scope(remote.work, "HEAD")
    assert caught.value.diagnostic() == {
        "behind": 1,
        "merge_base": remote.base,
        "status": "stale-base",
        "tip": tip,
    }


def test_local_base_behind_is_also_refused(remote: Remote) -> None:
    git(remote.work, "checkout", "-q", "main")
    newer = commit(remote.work, {"m.py": "m\n"}, "main moves")
    git(remote.work, "checkout", "-q", "feature")
    with pytest.raises(scope.StaleBaseError) as caught:
        scope.resolve_committed_scope(remote.work, "main...feature")
    assert caught.value.tip == newer


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a..b", "two-dot range"),
        ("...b", "not <base>...<head>"),
        ("worktree:HEAD", "worktree: prefix"),
        ("nosuch", "does not name a commit"),
        ("", "empty"),
        ("-x", "not a revision"),
    ],
)
def test_malformed_selectors(remote: Remote, selector: str, message: str) -> None:
    with pytest.raises(scope.ScopeResolutionError, match=message):
        scope.resolve_committed_scope(remote.work, selector)


def test_missing_origin_head_is_an_error_not_a_guess(tmp_path: Path) -> None:
    repo = tmp_path / "solo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    commit(repo, {"a": "a"}, "one")
    with pytest.raises(scope.ScopeResolutionError, match="origin/HEAD"):
        scope.resolve_committed_scope(repo, "HEAD")


def test_resolved_keys_win_over_the_audit_input(remote: Remote) -> None:
    document = scope.resolve(
        remote.work,
        "HEAD",
        {"base": "forged", "changed_paths": [], "artifact_selection": "forged", "selector": "HEAD"},
        env={},
    )
    assert document["base"] == remote.base and document["selector"] == "HEAD"
    assert [entry["path"] for entry in document["artifact_selection"]] == document["changed_paths"]


def test_live_paths_get_a_selection_too(remote: Remote) -> None:
    document = scope.resolve(remote.work, "HEAD", {"live_paths": ["new.py", "a.py"]}, env={})
    paths = [entry["path"] for entry in document["artifact_selection"]]
    assert paths == ["a.py", "notes.txt", "tests/test_a.py", "web/app.ts", "new.py"]


def test_audit_input_files_stay_inside_the_scratch_dir(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    inside = scratch / "in.json"
    inside.write_text('{"selector": "HEAD"}')
    assert scope.read_audit_input(str(inside), scratch) == {"selector": "HEAD"}
    outside = tmp_path / "out.json"
    outside.write_text("{}")
    with pytest.raises(scope.ScopeInputError, match="outside --scratch-dir"):
        scope.read_audit_input(str(outside), scratch)
    sneaky = scratch / "link.json"
    sneaky.symlink_to(outside)
    with pytest.raises(scope.ScopeInputError, match="outside --scratch-dir"):
        scope.read_audit_input(str(sneaky), scratch)
    with pytest.raises(scope.ScopeInputError, match="outside --scratch-dir"):
        scope.read_audit_input(str(scratch / ".." / "out.json"), scratch)
    with pytest.raises(scope.ScopeInputError, match="outside --scratch-dir"):
        scope.check_output(str(tmp_path / "start.json"), scratch)


@pytest.mark.parametrize(("text", "message"), [("{", "JSON object"), ("[1]", "not list")])
def test_audit_input_must_be_a_json_object(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "in.json"
    path.write_text(text)
    with pytest.raises(scope.ScopeInputError, match=message):
        scope.read_audit_input(str(path), None)


def test_inline_audit_input_without_a_scratch_dir() -> None:
    assert scope.read_audit_input('{"a": 1}', None) == {"a": 1}
