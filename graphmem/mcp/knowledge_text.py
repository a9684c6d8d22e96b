"""Descriptions of the knowledge tools (knowledge_tools.py), written for the model that calls
them: when to use each tool, what it returns, an example where the arguments are not obvious."""

MARK_OUTDATED = """\
Retire a memory that is no longer true, keeping it in history. Give `superseded_by` (the id of \
the memory that replaces it, usually one you just stored) to link old -> new: the old one becomes \
`superseded`, recall then points at the successor and knowledge_timeline shows both. Without it \
the memory becomes `outdated`. Either way its validity ends, so recall_as_of keeps it for the past \
only. Prefer this over delete_memory for anything that was once true. Returns the retired memory.

Example: {"id": "<old decision>", "reason": "moved sessions to Postgres", "superseded_by": "<new>"}"""

MERGE = """\
Merge near-duplicate memories into one: `primary` is kept, each of `duplicates` is archived and \
linked to it (MERGED_INTO), so recall stops returning the copies. Returns the primary memory."""

STORE_DECISION = """\
Record a decision with its rationale, so later sessions know what was decided and why instead of \
re-deciding. Use `avoids` to name dead ends (ids) this decision steers clear of. When it replaces \
an older decision, store this one, then mark_outdated(old, superseded_by=<this id>). Returns the \
stored memory (kind decision).

Example: {"decision": "Sessions live in Postgres", "rationale": "Redis eviction lost sessions \
under load", "consequences": "one less service to run", "tags": ["auth"], "service": "web"}"""

STORE_DEAD_END = """\
When an approach failed, record it with store_dead_end so nobody tries it again: what was \
attempted, why it failed, and what to do instead. Recall shows dead ends as warnings next to \
related results. Returns the stored memory (kind dead_end).

Example: {"attempted_approach": "Cache JWTs in localStorage", "why_failed": "XSS can read them", \
"alternative": "httpOnly cookies"}"""

STORE_INCIDENT = """\
Record an incident (outage, data problem, broken deploy): summary, impact, root cause, resolution, \
severity (sev1 worst .. sev4) and when it happened. recall_similar_incidents finds it when the \
symptoms come back. Returns the stored memory (kind incident)."""

STORE_RUNBOOK = """\
Record a runbook: when to use it (`trigger`) and the ordered `steps`, with how to verify and roll \
back. `cites` lists project files the runbook relies on (paths relative to the project root); \
drift_scan reports when they change. Returns the stored memory (kind runbook).

Example: {"trigger": "disk full on the db host", "steps": ["run scripts/prune_wal.sh", \
"restart postgres"], "verification": "df -h shows < 80%", "cites": ["scripts/prune_wal.sh"]}"""

STORE_POSTMORTEM = """\
Record a postmortem after an incident: summary, root cause and action items; `incident_id` links \
it to the incident memory. Returns the stored memory (kind postmortem)."""

SEARCH_RUNBOOKS = """\
Find runbooks for a situation (an alert, a task such as "rotate the TLS certificate"). Call it \
before doing operational work by hand. Returns hits best first, like recall_memory."""

SIMILAR_INCIDENTS = """\
Find past incidents similar to what you see now (an error message, a symptom). Call it when \
something breaks: an earlier root cause and resolution may apply. Returns hits best first."""

PROMOTE = """\
Promote a memory to canonical knowledge: the reviewed, authoritative statement on its topic, \
kept true by `owner` (a person or team). Canonical memories come first in \
summarize_project_context. Returns the promoted memory."""

LIST_CANONICAL = """\
List canonical knowledge, optionally for one `context`. Returns `memories` (no ranking)."""

RECALL_CANONICAL = """\
Search canonical knowledge only: the authoritative answer, when you do not want notes, incidents \
or stale memories in the results. Returns hits best first."""

PROJECT_CONTEXT = """\
Before starting work, call summarize_project_context: canonical knowledge first (what is true \
and who owns it), then what happened lately, with counts by kind. Give `context` to narrow it to \
one project area. Returns {context, canonical, recent, counts}."""

BANK_VIEW = """\
One view of the project's memory bank: decisions, runbooks, incidents, caveats, migrations, \
dead_ends, canonical_overview, or review_queue (what needs verification or review). Returns \
{view, memories}."""

RECALL_AS_OF = """\
Recall what was known at a past moment: only memories valid then (valid_from <= as_of < \
valid_to) and recorded before it, including ones superseded since. Use it to understand why \
something was done at the time. `as_of` is an ISO date or date-time (UTC), e.g. "2024-03-01".

Example: {"query": "session storage", "as_of": "2024-02-01"}"""

TIMELINE = """\
Show how one piece of knowledge changed: every version, oldest first, with when and why each was \
superseded or outdated. Give either `query` (finds the knowledge by words) or `id`, not both. \
Returns {anchor_id, entries}: each entry is a version (id, kind, content...) with superseded_by, \
superseded_at and reason when it was replaced."""

CITE = """\
Record that a memory relies on a file (`path` relative to the project root, `./` optional; the \
file must exist), with an optional `section`. The file's sha256 is kept, so drift_scan can tell when the source \
changed or was deleted. Returns the citation."""

VERIFY = """\
Record that you checked a memory against reality: how (`method`, e.g. "read src/auth.py", "ran \
the test suite") and the outcome: verified, failed (it is wrong) or needs_update (partly wrong). \
`verified` also records the current hashes of the files it cites, clearing their drift. Returns \
the memory."""

CANDIDATES = """\
List memories due for verification: canonical or at least `min_importance` important, and not \
verified in the last `days` days. Check them (read the code, run the command), then call \
verify_entry."""

DRIFT = """\
Check every cited file against the sha256 recorded when it was cited or last verified. Returns \
{checked, items}: each item names the memory, the path and whether the source changed or is \
missing. Re-check those memories, then verify_entry or mark_outdated them."""
