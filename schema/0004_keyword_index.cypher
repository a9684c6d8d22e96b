// Keyword search moved into the process (graphmem/storage/keywords.py): Kùzu's full-text index
// cost ~1 ms per inserted row, refused multi-row inserts and slowed with the store's size.
CALL DROP_FTS_INDEX('Memory', 'memory_fts');
