"""The in-process search state of a store, which knows no engine: keyword postings, the memory
columns recall scores from, row numbers, the entity index multi-hop walks, the documents'
sections and chunks, and their cache on disk. The store builds them from its reads and keeps
them current with its writes; nothing here reads or writes the database."""
