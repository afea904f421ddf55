"""What every stage shares: settings, identifiers, errors that name the problem, secrets kept in
memory, endpoint key rotation, planned text edits, XML namespaces and closable resources."""
