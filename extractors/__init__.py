"""Triple extractors behind one protocol (installed as `graphmem.extractors`)."""
