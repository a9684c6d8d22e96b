// Stewardship: each run of the steward (StewardRun, its report as JSON), what it found (Finding:
// kind, targets, evidence as JSON, the action it proposes, its status in the inbox), FLAGS from a
// finding to the memories it is about, and the audit rows of what it applied, by run, so a run
// can be undone; targeted_count beside access_count (a use an id or a filter asked for), and
// reference_count (what other knowledge points at a memory, recomputed by recount_references).
// `fingerprint` is (scope, targets) hashed and `evidence_hash` the evidence's: a
// finding already pending or resolved is filed again only when its evidence changed.
CREATE NODE TABLE StewardRun(id STRING PRIMARY KEY, scope STRING, dry_run BOOLEAN, context STRING, service STRING, actor STRING, started_at TIMESTAMP, finished_at TIMESTAMP, report STRING);
CREATE NODE TABLE Finding(id STRING PRIMARY KEY, run STRING, kind STRING, scope STRING, targets STRING[], evidence STRING, evidence_hash STRING, fingerprint STRING, confidence DOUBLE, action STRING, summary STRING, status STRING, auto BOOLEAN, error STRING, note STRING, created_at TIMESTAMP, resolved_at TIMESTAMP, resolved_by STRING);
CREATE REL TABLE FLAGS(FROM Finding TO Memory);
ALTER TABLE Audit ADD run STRING;
ALTER TABLE Audit ADD undone_at TIMESTAMP;
ALTER TABLE Memory ADD targeted_count INT64;
ALTER TABLE Memory ADD reference_count INT64;
