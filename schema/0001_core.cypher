// Core graph: typed memories, store metadata. Vectors live in per-space tables created at run time
// (Vec_<space>), and the full-text index is created by the migration runner after this file.
CREATE NODE TABLE _Meta(key STRING PRIMARY KEY, value STRING);
CREATE NODE TABLE Memory(
    id STRING PRIMARY KEY,
    kind STRING,
    type STRING,
    title STRING,
    content STRING,
    tags STRING[],
    context STRING,
    service STRING,
    importance DOUBLE,
    confidence DOUBLE,
    lifecycle STRING,
    layer STRING,
    owner STRING,
    metadata STRING,
    created_at TIMESTAMP,
    updated_at TIMESTAMP,
    valid_from TIMESTAMP,
    valid_to TIMESTAMP,
    accessed_at TIMESTAMP,
    access_count INT64,
    verified_at TIMESTAMP,
    verify_status STRING,
    session_id STRING,
    search_text STRING
);
CREATE REL TABLE SUPERSEDES(FROM Memory TO Memory, at TIMESTAMP, reason STRING);
CALL CREATE_FTS_INDEX('Memory', 'memory_fts', ['search_text'], stemmer := 'porter');
