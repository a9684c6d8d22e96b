"""Project documents in the graph: files found under the roots, parsed by their structure into
sections and chunks, indexed incrementally and searched like memories."""
