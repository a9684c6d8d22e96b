"""Knowledge over time: lifecycle, supersession, engineering records, canonical knowledge,
as-of views and timelines, verification and drift."""
