// An ADR that says it supersedes another (graphmem.documents.adr) links the two documents as
// memories are linked; `reason` names the document whose text stated it, so indexing that
// document again replaces what it said.
ALTER TABLE SUPERSEDES ADD FROM Document TO Document;
