"""Secrets are replaced before documents are stored; names, placeholders and prose survive.

Every secret in tests/documents/secrets/ is FAKE: random strings in the shape of real ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.documents.redact import REDACTED, redact

JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX2hlcmU"
CORPUS = Path(__file__).parent / "secrets"
EXPECTED: dict[str, dict[str, list[str]]] = json.loads(
    (CORPUS / "expected.json").read_text(encoding="utf-8")
)


def test_the_corpus_covers_every_kind_of_file() -> None:
    files = [p for p in CORPUS.iterdir() if p.name != "expected.json"]
    assert len(files) >= 12
    assert {p.suffix for p in files} >= {".md", ".env", ".yaml", ".json", ".tf", ".sh", ".txt"}
    assert sorted(EXPECTED) == sorted(p.name for p in files)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_secret_of_the_corpus_survives_redaction(name: str) -> None:
    text = (CORPUS / name).read_text(encoding="utf-8")
    redacted, count = redact(text)
    secrets = EXPECTED[name]["secrets"]
    assert [s for s in secrets if s in redacted] == []
    if secrets:
        assert count >= 1
    else:
        assert (redacted, count) == (text, 0)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_text_around_the_secrets_survives_redaction(name: str) -> None:
    redacted, _ = redact((CORPUS / name).read_text(encoding="utf-8"))
    assert [kept for kept in EXPECTED[name]["kept"] if kept not in redacted] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2x", "password=[REDACTED]"),
        ("DB_PASSWORD=s3cr3t-Value", "DB_PASSWORD=[REDACTED]"),
        (
            "export AWS_SECRET_ACCESS_KEY=abcdEFGH1234/ijkl",
            "export AWS_SECRET_ACCESS_KEY=[REDACTED]",
        ),
        ("  passwd: changeme", "  passwd: [REDACTED]"),
        ("pwd: 12345678", "pwd: [REDACTED]"),
        ('{"password": "p@ss\\"word"}', '{"password": "[REDACTED]"}'),
        ("'api_key' => 'abc123'", "'api_key' => '[REDACTED]'"),
        ('client_secret = "Zx9-Yw8"', 'client_secret = "[REDACTED]"'),
        ("apiKey: k-123456", "apiKey: [REDACTED]"),
        ("api-key: k-123456", "api-key: [REDACTED]"),
        ("X-Api-Key: 0123abcd", "X-Api-Key: [REDACTED]"),
        ("privateKey='abc'", "privateKey='[REDACTED]'"),
        ("access_key = AKIDEXAMPLE12", "access_key = [REDACTED]"),
        ("secret_key: wJalrXUtnFEMI", "secret_key: [REDACTED]"),
        ("token: abc.def.ghi # rotated", "token: [REDACTED] # rotated"),
        ("PGPASSWORD=pg123 psql", "PGPASSWORD=[REDACTED] psql"),
        ("Authorization: Bearer abcDEF123456", "Authorization: Bearer [REDACTED]"),
        (
            "curl -H 'Authorization: Bearer 9f8e7d6c5b4a' https://x",
            "curl -H 'Authorization: Bearer [REDACTED]' https://x",
        ),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"),
        ("postgres://user:pass1234@host/db", "postgres://user:[REDACTED]@host/db"),
        ("redis://default:p%40ss@cache:6379", "redis://default:[REDACTED]@cache:6379"),
        ("id AKIA" + "Q2W3E4R5T6Y7U8I9 here", "id [REDACTED] here"),
        ("gho_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "[REDACTED]"),
        ("xoxb-" + "1234567890-abcdefGHIJ", "[REDACTED]"),
        ("sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED]"),
        ("AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "[REDACTED]"),
        ("jwt " + JWT + " end", "jwt [REDACTED] end"),
    ],
)
def test_secrets_are_replaced_and_their_names_kept(text: str, expected: str) -> None:
    redacted, count = redact(text)
    assert redacted == expected
    assert count == 1


@pytest.mark.parametrize(
    "text",
    [
        "password: <your-password>",
        "PASSWORD=${PASSWORD}",
        "password=$PASSWORD",
        "token: $(cat /run/secrets/token)",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        'password: "{{ .Values.db.password }}"',
        "password: ***",
        'secret: ""',
        "api_key=",
        "password: null",
        "password: |",
        'token = os.environ["TOKEN"]',
        'password = getenv("DB_PASSWORD")',
        "password: [REDACTED]",
        "postgres://user:${DB_PASSWORD}@host/db",
        "Authorization: Bearer $TOKEN",
        "Authorization: Bearer <token>",
        "The password policy requires 12 characters.",
        "We use a token bucket algorithm for rate limiting.",
        "Password: ask the on-call engineer for it.",
        "Use Bearer authentication on every request.",
        "Basic authentication is disabled.",
        "secret_name: billing-db",
        "token_ttl: 3600",
        "max_tokens: 4096",
        "OLDPWD=/home/dev",
        "kind: Secret",
        "password_policy: strict",
        "tokens: 12",
    ],
)
def test_placeholders_and_prose_are_left_alone(text: str) -> None:
    assert redact(text) == (text, 0)


def test_a_private_key_block_is_redacted_whole_and_keeps_its_markers() -> None:
    text = (
        "key:\n  -----BEGIN OPENSSH PRIVATE KEY-----\n  b3BlbnNzaC1rZXk\n  AAAABG5vbmU\n"
        "  -----END OPENSSH PRIVATE KEY-----\nafter"
    )
    redacted, count = redact(text)
    assert redacted == (
        "key:\n  -----BEGIN OPENSSH PRIVATE KEY-----\n  [REDACTED]\n"
        "  -----END OPENSSH PRIVATE KEY-----\nafter"
    )
    assert count == 1


def test_an_encrypted_key_with_a_blank_line_inside_is_redacted_to_its_end() -> None:
    text = (
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\n"
        "MIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
    )
    redacted, _ = redact(text)
    assert "MIIEpAIBAAKCAQEA" not in redacted and "ENCRYPTED" not in redacted


def test_a_key_cut_short_is_redacted_up_to_the_next_blank_line() -> None:
    text = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\nsecondLine\n\nThe rest of the page."
    redacted, count = redact(text)
    assert redacted == "-----BEGIN EC PRIVATE KEY-----\n[REDACTED]\n\nThe rest of the page."
    assert count == 1


def test_a_key_in_a_json_string_keeps_its_escaped_line_breaks() -> None:
    text = '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEv\\nQIBAD\\n-----END PRIVATE KEY-----\\n"}'
    redacted, count = redact(text)
    assert redacted == (
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\n[REDACTED]\\n-----END PRIVATE KEY-----\\n"}'
    )
    assert count == 1


def test_a_secret_matched_by_two_rules_is_counted_once() -> None:
    assert redact("GITHUB_TOKEN=ghp_" + "A" * 36) == ("GITHUB_TOKEN=[REDACTED]", 1)
    assert redact("Authorization: Bearer " + JWT) == (
        "Authorization: Bearer [REDACTED]",
        1,
    )


def test_every_secret_on_a_line_is_counted() -> None:
    redacted, count = redact("user=bob password=hunter2x token=abc123xyz")
    assert redacted == f"user=bob password={REDACTED} token={REDACTED}"
    assert count == 2


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_redaction_never_fails_and_is_idempotent(text: str) -> None:
    once, _ = redact(text)
    assert redact(once) == (once, 0)
