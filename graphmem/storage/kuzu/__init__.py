"""The Kùzu dialect, shared by Kùzu 0.11.3 and LadybugDB (graphmem.storage.engines): the
connection, one repository per concern, and the store that composes them. Only graphmem/storage
imports this package; the domain opens a store through graphmem.storage.open_store_backend."""
