// Knowledge over time: verification fields, dead ends a decision avoids, merged duplicates, and
// the documents and files that memories cite (with the file's hash when last verified).
ALTER TABLE Memory ADD verify_method STRING;
ALTER TABLE Memory ADD verify_note STRING;
ALTER TABLE Memory ADD lifecycle_reason STRING;
CREATE REL TABLE AVOIDS(FROM Memory TO Memory, at TIMESTAMP);
CREATE REL TABLE MERGED_INTO(FROM Memory TO Memory, at TIMESTAMP, reason STRING);
CREATE NODE TABLE Document(path STRING PRIMARY KEY, title STRING, source_type STRING, sha256 STRING, mtime TIMESTAMP, size INT64, indexed_at TIMESTAMP);
CREATE REL TABLE CITES(FROM Memory TO Document, section STRING, sha256_at_verify STRING, at TIMESTAMP);
