"""Source types of files, boilerplate sections, and the source types a question favours."""

from __future__ import annotations

from typing import Any

import pytest

from graphmem.documents.classify import (
    SourceType,
    is_noise_section,
    query_intent,
    source_type,
)

K8S = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n"
ADR_TEXT = "# Use Kùzu\n\n## Context\n\nWe need a graph.\n\n## Decision\n\nKùzu.\n"


@pytest.mark.parametrize(
    ("path", "metadata", "text", "expected"),
    [
        ("docs/adr/0001-use-kuzu.md", {}, "# Use Kùzu\n", "adr"),
        ("docs/decisions/0042-x.md", {}, "# X\n", "adr"),
        ("architecture/ADR-007-queues.md", {}, "# Queues\n", "adr"),
        ("docs/design/kuzu.md", {"status": "accepted"}, ADR_TEXT, "adr"),
        ("docs/design/kuzu.md", {}, "# Kùzu\n\nStatus: draft\n\n" + ADR_TEXT[12:], "adr"),
        ("docs/design/kuzu.md", {}, ADR_TEXT, "docs"),
        ("notes/graph.md", {}, "# T\n\n## Status\n\nAccepted\n\n" + ADR_TEXT[12:], "adr"),
        ("rfcs/0012-foo.md", {}, "# Foo\n", "rfc"),
        ("proposals/streaming.md", {"title": "RFC 12: Streaming"}, "", "rfc"),
        ("docs/runbooks/db-failover.md", {}, "# Failover\n", "runbook"),
        ("alerts/HighErrorRate.md", {}, "# HighErrorRate\n", "runbook"),
        ("playbooks/x.md", {}, "# X\n", "runbook"),
        ("docs/ops/db.md", {}, "# Runbook: database failover\n\nSteps.\n", "runbook"),
        ("docs/ops/queue-runbook.md", {}, "# Queue\n", "runbook"),
        ("postmortems/2024-01-outage.md", {}, "# Outage\n", "postmortem"),
        ("incident-reviews/2024-02-dns.md", {}, "# DNS\n", "postmortem"),
        ("docs/2024-03-db.md", {}, "# Postmortem: DB down\n", "postmortem"),
        (
            "docs/2024-04-cache.md",
            {},
            "# Cache\n\n## Impact\n\nx\n\n## Root cause\n\ny\n",
            "postmortem",
        ),
        ("dead-ends/sqlite-fts.md", {}, "# SQLite FTS\n", "dead_end"),
        ("notes/sqlite.md", {"type": "dead_end"}, "# SQLite\n", "dead_end"),
        ("notes/sqlite.md", {"type": "dead-end"}, "# SQLite\n", "dead_end"),
        ("notes/x.md", {"category": "Runbook"}, "# X\n", "runbook"),
        ("notes/x.md", {"tags": ["db", "postmortem"]}, "# X\n", "postmortem"),
        ("notes/x.md", {"tags": "adr, storage"}, "# X\n", "adr"),
        ("CHANGELOG.md", {}, "# Changelog\n", "changelog"),
        ("HISTORY.md", {}, "", "changelog"),
        ("NEWS.md", {}, "", "changelog"),
        ("pkg/CHANGES.rst", {}, "", "changelog"),
        ("README.md", {}, "# graphmem\n", "readme"),
        ("services/billing/README.md", {}, "# Billing\n", "readme"),
        ("docs/adr/README.md", {}, "# ADRs\n", "readme"),
        ("docs/readme.rst", {}, "", "readme"),
        (".github/workflows/ci.yml", {}, "on: push\n", "ci_config"),
        (".github/workflows/release.yaml", {}, "on: push\n", "ci_config"),
        (".gitlab-ci.yml", {}, "stages: [test]\n", "ci_config"),
        (".circleci/config.yml", {}, "version: 2.1\n", "ci_config"),
        ("Jenkinsfile", {}, "pipeline {}\n", "ci_config"),
        ("ci/Jenkinsfile.release", {}, "pipeline {}\n", "ci_config"),
        ("azure-pipelines.yml", {}, "trigger: [main]\n", "ci_config"),
        ("charts/x/Chart.yaml", {}, "apiVersion: v2\nname: x\n", "helm"),
        ("charts/x/values.yaml", {}, "replicas: 2\n", "helm"),
        ("charts/x/templates/deploy.yaml", {}, K8S, "helm"),
        ("deploy/billing/templates/svc.yaml", {}, "spec: {{ .Values.spec }}\n", "helm"),
        ("infra/main.tf", {}, 'resource "a" "b" {}\n', "terraform"),
        ("infra/prod.tfvars", {}, "region = 1\n", "terraform"),
        ("k8s/deploy.yaml", {}, K8S, "k8s"),
        ("deploy.yml", {}, "---\n" + K8S, "k8s"),
        ("overlays/prod/kustomization.yaml", {}, "resources: []\n", "k8s"),
        ("config/app.yaml", {}, "port: 8080\nkind_of: x\n", "config"),
        ("docs/guide.md", {}, "# Guide\n", "docs"),
        ("docs/guide.rst", {}, "Guide\n=====\n", "docs"),
        ("notes/todo.txt", {}, "todo\n", "docs"),
        ("Dockerfile", {}, "FROM x\n", "config"),
        ("Makefile", {}, "all:\n", "config"),
        ("pyproject.toml", {}, "[project]\n", "config"),
        ("setup.cfg", {}, "[metadata]\n", "config"),
        ("alerts/rules.yaml", {}, "groups: []\n", "config"),
        ("requirements-dev.txt", {}, "pytest\n", "config"),
        ("native/CMakeLists.txt", {}, "project(x)\n", "config"),
        ("docs\\runbooks\\restart.md", {}, "# Restart\n", "runbook"),
    ],
)
def test_source_type_comes_from_path_name_front_matter_and_content(
    path: str, metadata: dict[str, Any], text: str, expected: SourceType
) -> None:
    assert source_type(path, metadata, text) == expected


def test_a_declared_type_wins_over_the_folder() -> None:
    assert source_type("docs/runbooks/x.md", {"type": "adr"}, "# X\n") == "adr"


def test_an_unknown_declared_type_falls_back_to_the_path() -> None:
    assert source_type("docs/runbooks/x.md", {"type": "guide"}, "# X\n") == "runbook"


@pytest.mark.parametrize(
    "title",
    [
        "Table of Contents",
        "Contents",
        "TOC",
        "References",
        "7. References",
        "References:",
        "See also",
        "Further reading",
        "Related links",
        "Links",
        "Changelog",
        "Change log",
        "Revision History",
        "Version history",
        "Acknowledgements",
        "Acknowledgments",
        "License",
        "2.3 License.",
        "**See Also**",
        "  iv. Further Reading  ",
    ],
)
def test_boilerplate_sections_are_noise(title: str) -> None:
    assert is_noise_section(title)


@pytest.mark.parametrize(
    "title",
    ["Rolling back", "API reference", "Links between services", "Licensing costs", "Context", ""],
)
def test_sections_with_content_are_not_noise(title: str) -> None:
    assert not is_noise_section(title)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("How do I roll back a bad deploy?", {"runbook", "k8s", "helm"}),
        ("how to restart the worker", {"runbook"}),
        ("steps to recover the database", {"runbook"}),
        ("what to do when the HighErrorRate alert fires", {"runbook"}),
        ("Why did we choose Kùzu over Neo4j?", {"adr", "rfc"}),
        ("what alternatives were considered", {"adr", "rfc"}),
        ("the trade-off between cost and latency", {"adr", "rfc"}),
        ("what happened in the March outage", {"postmortem"}),
        ("root cause of the incident", {"postmortem"}),
        ("what changed in version 2.3", {"changelog"}),
        ("which release added streaming", {"changelog"}),
        ("why does the CI pipeline fail", {"ci_config"}),
        ("which workflow runs the build", {"ci_config"}),
        ("how many pods does the helm chart start", {"k8s", "helm"}),
        ("which IAM role writes to the logs bucket", {"terraform"}),
        ("where is the terraform state", {"terraform"}),
        ("several sev-1 tickets", {"postmortem"}),
        ("several things about the architecture", set()),
        ("the kuzu database schema", set()),
        ("", set()),
    ],
)
def test_query_intent_names_the_source_types_a_question_favours(
    query: str, expected: set[str]
) -> None:
    assert query_intent(query) == frozenset(expected)


def test_query_intent_matches_whole_words_only() -> None:
    assert query_intent("several prefixes in the cicada artifact") == frozenset()
    assert query_intent("redeployment") == frozenset()
