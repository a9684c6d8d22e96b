"""The entity graph: extraction into Entity and Fact nodes, and multi-hop recall over them."""
