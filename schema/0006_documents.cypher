// Project documents: a Document's heading tree (Section, CHILD_OF) and its chunks (Chunk,
// IN_SECTION, NEXT in reading order). A Document cited before it was indexed keeps its node;
// `indexed_sha` (not `sha256`, which citations update) says which version the sections are of.
// `uid` stays the same when the file is renamed, and keys its sections and chunks, so a rename
// moves them without embedding anything again.
ALTER TABLE Document ADD uid STRING;
ALTER TABLE Document ADD root STRING;
ALTER TABLE Document ADD rel STRING;
ALTER TABLE Document ADD indexed_sha STRING;
ALTER TABLE Document ADD metadata STRING;
CREATE NODE TABLE Section(key STRING PRIMARY KEY, doc STRING, section_key STRING, title STRING, level INT64, breadcrumb STRING[], ord INT64, start_line INT64, end_line INT64);
CREATE NODE TABLE Chunk(id STRING PRIMARY KEY, doc STRING, section STRING, ord INT64, text STRING, search_text STRING, start_line INT64, end_line INT64);
CREATE REL TABLE HAS_SECTION(FROM Document TO Section);
CREATE REL TABLE CHILD_OF(FROM Section TO Section);
CREATE REL TABLE IN_SECTION(FROM Chunk TO Section);
CREATE REL TABLE NEXT(FROM Chunk TO Chunk);
