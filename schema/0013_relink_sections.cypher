// A document's sections linked to another document: graphmem before this version linked the
// sections of a file written after others to one of those (a join inside the write's
// transaction matched the wrong Document). Each section is linked again to the document its
// `doc` names, once; the writers now link them by the document's key.
MATCH (d:Document)-[r:HAS_SECTION]->(s:Section) WHERE s.doc <> d.uid DELETE r;
MATCH (s:Section), (d:Document) WHERE d.uid = s.doc AND NOT EXISTS { MATCH (d)-[:HAS_SECTION]->(s) } CREATE (d)-[:HAS_SECTION]->(s);
