"""Recall: candidates (vector, keyword), features, fusion by RecallConfig recipes, explain."""
