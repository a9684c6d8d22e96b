// Entities and facts extracted from memories with provenance. A fact is a node (subject,
// predicate, object) so it can be indexed and cited; EntityAlias maps every name ever merged
// into an entity to that entity; Memory.extracted_by marks what a backfill has already done.
ALTER TABLE Memory ADD extracted_by STRING;
CREATE NODE TABLE Entity(id STRING PRIMARY KEY, name STRING, norm STRING, key STRING, label STRING, created_at TIMESTAMP);
CREATE NODE TABLE EntityAlias(norm STRING PRIMARY KEY, entity STRING);
CREATE NODE TABLE Fact(id STRING PRIMARY KEY, subject STRING, predicate STRING, object STRING, text STRING, confidence DOUBLE, extractor STRING, valid_from TIMESTAMP, valid_to TIMESTAMP, created_at TIMESTAMP);
CREATE REL TABLE MENTIONS(FROM Memory TO Entity, name STRING, extractor STRING);
CREATE REL TABLE SUBJECT(FROM Fact TO Entity);
CREATE REL TABLE OBJECT(FROM Fact TO Entity);
CREATE REL TABLE EXTRACTED_FROM(FROM Fact TO Memory, extractor STRING, confidence DOUBLE, at TIMESTAMP);
