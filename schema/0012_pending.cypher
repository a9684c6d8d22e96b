// The work a write leaves for later (graphmem.storage.pending): one row per item and kind of
// work (`extract`: a memory's entities and facts; `passages`: a memory's passage vectors that an
// import deferred; `extract_chunk`: a document chunk's entities), keyed `<work>:<item>`, written
// with the item and deleted with the work's result. A start reads what is left from here.
// Existing stores: what the old scans found pending is recorded once, here; passages an import
// left unfinished (the `passages_pending` flag) are found by the owner's first start.
CREATE NODE TABLE Pending(key STRING PRIMARY KEY, work STRING, item STRING, at TIMESTAMP);
MATCH (m:Memory) WHERE m.extracted_by IS NULL AND m.lifecycle <> 'archived' CREATE (:Pending {key: 'extract:' + m.id, work: 'extract', item: m.id, at: current_timestamp()});
MATCH (c:Chunk) WHERE c.extracted_by IS NULL CREATE (:Pending {key: 'extract_chunk:' + c.id, work: 'extract_chunk', item: c.id, at: current_timestamp()});
