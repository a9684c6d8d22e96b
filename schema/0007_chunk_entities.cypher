// Entities mentioned by document chunks, as by memories: MENTIONS gains Chunk as a source, and a
// chunk is marked once its entities are in the graph (null: pending, like Memory.extracted_by).
ALTER TABLE Chunk ADD extracted_by STRING;
ALTER TABLE MENTIONS ADD FROM Chunk TO Entity;
