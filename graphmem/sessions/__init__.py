"""Agent sessions: checkpoints of their transcripts while they run, and what closing one keeps."""
