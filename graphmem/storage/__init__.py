"""Storage: the only package that imports kuzu or writes Cypher."""
