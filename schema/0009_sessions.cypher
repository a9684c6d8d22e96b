// Sessions and the review queue: a Session node per agent session, what it produced linked to it
// (IN_SESSION), the changes close_session proposed but did not apply (ReviewItem, REVIEWS the
// memory it would change), and an Audit row for every change applied or item resolved.
// `fingerprint` is (action, target, statement) hashed: an item resolved once is never proposed
// again for the same target.
CREATE NODE TABLE Session(id STRING PRIMARY KEY, client STRING, mode STRING, context STRING, service STRING, cwd STRING, started_at TIMESTAMP, ended_at TIMESTAMP, summary_id STRING);
CREATE NODE TABLE ReviewItem(id STRING PRIMARY KEY, session STRING, action STRING, statement_kind STRING, statement STRING, target STRING, risk STRING, confidence DOUBLE, rationale STRING, payload STRING, status STRING, note STRING, created_at TIMESTAMP, resolved_at TIMESTAMP, resolved_by STRING, fingerprint STRING);
CREATE NODE TABLE Audit(id STRING PRIMARY KEY, actor STRING, action STRING, target STRING, item STRING, before STRING, after STRING, at TIMESTAMP);
CREATE REL TABLE IN_SESSION(FROM Memory TO Session, FROM ReviewItem TO Session);
CREATE REL TABLE REVIEWS(FROM ReviewItem TO Memory);
