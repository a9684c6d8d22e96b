// Sedimentation (graphmem.steward.sediment): a memory's `layer` (surface, episodic, semantic,
// character; null reads as surface, so existing memories need no rewrite), when it last changed
// (`layer_at`) and what changed it (`layer_by`: up or down by the cycle, promote or demote by
// hand). The cycle measures disuse from the latest of use, creation and layer change, and leaves a
// layer set by hand in place for the disuse period.
ALTER TABLE Memory ADD layer_at TIMESTAMP;
ALTER TABLE Memory ADD layer_by STRING;
